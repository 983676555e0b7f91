import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import type { Reachability } from "@tenet/core"
import {
  Api,
  Common,
  Exports,
  Page,
  ReachabilityMatrix,
  SecurityRule,
  SecurityRules,
  Subnets,
  Traffic,
  Vpcs
} from "@tenet/core"
import { Effect, FiberRef, identity } from "effect"
import * as Pages from "../Pages.js"
import * as RequestContext from "../RequestContext.js"
import * as ResponseJson from "../ResponseJson.js"
import { asTenant } from "./AsTenant.js"

/** The export format the request's `Accept` asks for among the matched endpoint's (`Exports.Formats`), or null for JSON. */
const wanted = Effect.map(
  Effect.all([HttpServerRequest.HttpServerRequest, FiberRef.get(RequestContext.Current)]),
  ([request, state]) =>
    Exports.negotiate(request.headers["accept"], (state?.endpoint?.formats ?? []).map((f) => f.type))
)

/** Every answer of an endpoint with exports varies with `Accept`. */
const VARIES = { vary: "Accept" }

/** An export, as text of its format. */
const exportOf = (format: Exports.Format, text: string, headers: Record<string, string> = {}) =>
  HttpServerResponse.text(text, { contentType: `${format}; charset=utf-8`, headers: { ...VARIES, ...headers } })

export const VpcsHandlers = HttpApiBuilder.group(
  Api.TenetApi,
  "vpcs",
  (handlers) =>
    Effect.map(Effect.all([Vpcs.Vpcs, Traffic.Traffic]), ([vpcs, traffic]) => {
      return handlers
        .handle("create", ({ payload }) =>
          asTenant((caller) => vpcs.create(caller, payload)).pipe(ResponseJson.answerWithEtag))
        .handle("list", ({ urlParams }) =>
          Pages.paged(urlParams, Page.byCreation, asTenant(vpcs.list), (page) =>
            ResponseJson.answer(Effect.succeed(page))))
        .handle("delete", ({ headers, path }) =>
          asTenant((caller) =>
            vpcs.delete(caller, path.vpc_id, headers["if-match"])
          ))
        .handle(
          "reachability",
          ({ path, urlParams }) =>
            Effect.flatMap(wanted, (format) => {
              const detail = ReachabilityMatrix.detailOf(urlParams)
              return Pages.computed(
                urlParams,
                { vpc_id: path.vpc_id, detail, endpoint: urlParams.endpoint ?? "" },
                { limit: ReachabilityMatrix.MAX_PAIRS },
                (request) =>
                  asTenant((caller) =>
                    traffic.reachability(caller, path.vpc_id, {
                      detail,
                      endpoint: urlParams.endpoint,
                      after: request.after as Reachability.PairKey | undefined,
                      limit: request.limit
                    })
                  ).pipe(Effect.map(({ matrix, next }) => ({ page: matrix, next }))),
                (m) =>
                  format === null
                    ? ResponseJson.answer(Effect.succeed(m)).pipe(Effect.map(ResponseJson.withHeaders(VARIES)))
                    : Effect.succeed(
                      exportOf(
                        format,
                        format === Exports.DOT ? Exports.reachabilityDot(m) : Exports.reachabilityCsv(m)
                      )
                    )
              )
            })
        )
        .handle(
          "explain",
          ({ path, urlParams }) =>
            asTenant((caller) =>
              traffic.explain(caller, path.vpc_id, urlParams)
            ).pipe(ResponseJson.answer)
        )
    })
)

export const SubnetsHandlers = HttpApiBuilder.group(
  Api.TenetApi,
  "subnets",
  (handlers) =>
    Effect.map(Subnets.Subnets, (subnets) => {
      return handlers
        .handle("create", ({ payload }) =>
          asTenant((caller) => subnets.create(caller, payload)).pipe(ResponseJson.answerWithEtag))
        .handle("list", ({ urlParams }) =>
          Pages.paged(urlParams, Page.byCreation, asTenant(subnets.list), (page) =>
            ResponseJson.answer(Effect.succeed(page))))
    })
)

export const SecurityRulesHandlers = HttpApiBuilder.group(
  Api.TenetApi,
  "securityRules",
  (handlers) =>
    Effect.map(Effect.all([SecurityRules.SecurityRules, Traffic.Traffic]), ([rules, traffic]) => {
      return handlers
        .handle(
          "list",
          ({ urlParams }) =>
            Effect.flatMap(wanted, (format) =>
              asTenant((caller) => rules.list(caller, urlParams.vpc_id)).pipe(
                // A page is of `rules`; the ETag stays the whole list's (a declaration's If-Match).
                Effect.flatMap(({ etag, keyOf, list }) =>
                  Pages.paged(urlParams, keyOf, Effect.succeed(list.rules), (page) => {
                    const answer = page === list.rules
                      ? list
                      : SecurityRule.RuleList.make({ ...list, rules: page }, Common.TRUSTED)
                    return format === null
                      ? Effect.map(
                        ResponseJson.answer(Effect.succeed(answer)),
                        ResponseJson.withHeaders({ ...VARIES, etag })
                      )
                      : Effect.succeed(exportOf(format, Exports.rulesCsv(answer), { etag }))
                  }, { vpc_id: urlParams.vpc_id })
                )
              ))
        )
        .handle(
          "analysis",
          ({ urlParams }) =>
            Effect.flatMap(wanted, (format) => {
              const analysis = asTenant((caller) => rules.analysis(caller, urlParams.vpc_id))
              return format === null
                ? analysis.pipe(ResponseJson.answer, Effect.map(ResponseJson.withHeaders(VARIES)))
                : asTenant((caller) =>
                  Effect.zipWith(
                    analysis,
                    rules.list(caller, urlParams.vpc_id),
                    (found, { list }) => exportOf(format, Exports.analysisSarif(found, list, Api.API_VERSION))
                  )
                )
            })
        )
        .handle("get", ({ path }) =>
          asTenant((caller) => rules.get(caller, path.rule_id)).pipe(
            Effect.flatMap(({ etag, rule }) =>
              Effect.map(ResponseJson.answer(Effect.succeed(rule)), ResponseJson.withHeaders({ etag }))
            )
          ))
        .handle("create", ({ payload, urlParams }) =>
          asTenant((caller) =>
            rules.create(caller, payload, urlParams.dry_run === true)
          ).pipe(ResponseJson.answerWithEtagOf((answer) =>
            answer instanceof SecurityRule.RuleMutation ? answer.rule.etag : undefined
          )))
        .handle("update", ({ headers, path, payload, urlParams }) =>
          asTenant((caller) =>
            rules.update(caller, path.rule_id, payload, urlParams.dry_run === true, headers["if-match"])
          ).pipe(
            Effect.flatMap(({ answer, etag }) =>
              Effect.map(
                ResponseJson.answer(Effect.succeed(answer)),
                etag === null ? identity : ResponseJson.withHeaders({ etag })
              )
            )
          ))
        .handle("delete", ({ headers, path, urlParams }) =>
          asTenant((caller) =>
            rules.delete(caller, path.rule_id, urlParams.dry_run === true, headers["if-match"])
          ).pipe(ResponseJson.answer))
        .handle("reorder", ({ payload, urlParams }) =>
          asTenant((caller) =>
            rules.reorder(caller, payload.vpc_id, payload.rule_ids, urlParams.dry_run === true)
          )
            .pipe(ResponseJson.answer))
        .handle("replace", ({ headers, path, payload, urlParams }) =>
          asTenant((caller) =>
            rules.replace(caller, path.vpc_id, payload.rules, {
              ifMatch: headers["if-match"],
              dryRun: urlParams.dry_run === true
            })
          ).pipe(
            Effect.flatMap((answer) =>
              Effect.map(
                ResponseJson.answer(Effect.succeed(answer)),
                answer.dry_run ? identity : ResponseJson.withHeaders({ etag: answer.etag })
              )
            )
          ))
        .handle("evaluate", ({ payload }) =>
          asTenant((caller) =>
            traffic.evaluate(caller, payload)
          ).pipe(ResponseJson.answer))
    })
)
