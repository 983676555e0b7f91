/** Tenant networking: VPCs, subnets and security rules, each its kind's group (`resources/<kind>/`). */

export { SecurityRulesApi } from "../resources/securityRules/SecurityRulesApi.js"
export { SubnetsApi } from "../resources/subnets/SubnetsApi.js"
export { VpcsApi } from "../resources/vpcs/VpcsApi.js"
