// Preloaded before every test file (bunfig.toml): what a whole run shares.
import { afterAll } from "bun:test";
import { removeTempDirs } from "./helpers/temp.ts";

afterAll(removeTempDirs);
