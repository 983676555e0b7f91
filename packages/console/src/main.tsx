/** The console's entry: the app, mounted on the page the server serves at `/console`. */
import { render } from "preact"
import { App } from "./App.js"

render(<App />, document.getElementById("app")!)
