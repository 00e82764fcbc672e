// Preloaded by bun test (bunfig.toml). Tests start real servers and engines: a per-test limit of a
// minute leaves room on a slow CI machine while still failing a hang. Tighter deadlines are set
// inside the tests on what they wait for.
import { setDefaultTimeout } from "bun:test";

setDefaultTimeout(60_000);
