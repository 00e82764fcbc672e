// Log severities and the spellings config files and flags use for them.

export type Severity = "Trace" | "Debug" | "Info" | "Warning" | "Error" | "Fatal";

export const RANK: Record<Severity, number> = { Trace: 0, Debug: 1, Info: 2, Warning: 3, Error: 4, Fatal: 5 };

/** Maps config spellings (`info`, `warning`, `debug`, ...) onto a severity. */
export function parseLogLevel(value: string | undefined): Severity {
  const v = (value ?? "info").toLowerCase();
  const found = (Object.keys(RANK) as Severity[]).find((s) => s.toLowerCase() === v || (v === "warn" && s === "Warning"));
  if (!found) throw new Error(`unknown log level "${value}" (use trace, debug, info, warning, error or fatal)`);
  return found;
}

