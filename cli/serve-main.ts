// The server's entry: the CLI with its one command, `serve`, which `npm start` runs (scripts/build.ts
// --start bundles it) and the single executable loads for `serve` (its other commands load
// cli/main.ts). The server process needs none of the client commands, and bundled they would cost
// it 0.2 to 0.3 MB of idle RSS (their functions and tables are made at start-up; bench memory).
// The JIT policy module comes first, as in cli/main.ts.
import "./jit-policy.ts";
import { runCli } from "./dispatch.ts";
import { serve } from "./commands/serve.ts";

runCli([serve], process.argv.slice(2));
