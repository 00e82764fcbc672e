// The log's local time, read from the zone files glibc reads, against JavaScriptCore's own local
// time (ICU's zone data) in a process per TZ, and the zone files' POSIX rules against their own
// transition tables.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { loadZone, parsePosixRule, parseTzif, ruleOffset, zoneOffset } from "../../lib/local-time.ts";

const ZONEINFO = "/usr/share/zoneinfo";
// Zones whose rules have not changed in ICU's or Debian's data for decades: northern and
// southern daylight saving, half- and quarter-hour offsets, Lord Howe's half-hour shift and
// Dublin's negative saving.
const ZONES = ["America/New_York", "Europe/London", "Europe/Dublin", "Australia/Sydney", "Asia/Kolkata", "Pacific/Chatham", "America/St_Johns", "Australia/Lord_Howe", "UTC"];

const script = (tz: string) => `
const { wallClock, loadZone } = await import(${JSON.stringify(join(import.meta.dir, "../../lib/local-time.ts"))});
const instants = [];
for (let t = Date.UTC(1996, 0, 1); t < Date.UTC(2060, 0, 1); t += 6 * 3600e3 + 17 * 60e3 + 1234) instants.push(t);
const { transitions } = loadZone(${JSON.stringify(tz)});
for (const s of transitions) if (s > 820454400 && s < 2200000000) instants.push(s * 1000 - 1, s * 1000, s * 1000 + 1);
const bad = [];
for (const t of instants) {
  const d = new Date(t);
  const w = wallClock(d);
  const ours = [w.year, w.month, w.day, w.hours, w.minutes, w.seconds, w.milliseconds].join(",");
  const jsc = [d.getFullYear(), d.getMonth() + 1, d.getDate(), d.getHours(), d.getMinutes(), d.getSeconds(), d.getMilliseconds()].join(",");
  if (ours !== jsc) bad.push(d.toISOString() + " ours " + ours + " date " + jsc);
}
console.log(JSON.stringify({ checked: instants.length, bad: bad.slice(0, 5) }));
`;

describe("local time for log lines", () => {
  for (const tz of ZONES) {
    test(`${tz}: every instant 1996-2060 and each side of each transition reads as Date's local time`, () => {
      const run = Bun.spawnSync([process.execPath, "-e", script(tz)], { env: { ...process.env, TZ: tz } });
      expect(run.stderr.toString()).toBe("");
      const out = JSON.parse(run.stdout.toString());
      expect(out.bad).toEqual([]);
      expect(out.checked).toBeGreaterThan(89_000);
    });
  }

  test("a zone file's POSIX rule gives the offsets of its own transitions after the rule took over", () => {
    for (const tz of ["America/New_York", "Europe/London", "Europe/Dublin", "Australia/Sydney", "Pacific/Chatham", "America/St_Johns", "Australia/Lord_Howe"]) {
      const zone = parseTzif(readFileSync(join(ZONEINFO, tz)))!;
      expect(zone.rule?.dst).toBeDefined();
      // From 2012 every zone here has followed its current rule (St John's moved its changes
      // from 00:01 to 02:00 in 2011); Debian's files list transitions up to 2037, which the
      // rule must reproduce to the second.
      const from = Date.UTC(2012, 0, 1) / 1000;
      const last = zone.transitions[zone.transitions.length - 1]!;
      expect(last).toBeGreaterThan(Date.UTC(2036, 0, 1) / 1000);
      for (const s of zone.transitions.filter((x) => x > from)) {
        for (const t of [s - 1, s, s + 3600]) expect([tz, t, ruleOffset(zone.rule!, t)]).toEqual([tz, t, zoneOffset({ ...zone, rule: undefined }, t)]);
      }
    }
  });

  test("POSIX TZ strings: names in angle brackets, offsets with minutes, Julian and zero-based days, a DST offset by default an hour ahead", () => {
    expect(parsePosixRule("<+0330>-3:30")).toEqual({ std: 12_600 });
    expect(parsePosixRule("IST-5:30")).toEqual({ std: 19_800 });
    const us = parsePosixRule("EST5EDT")!;
    expect(us.std).toBe(-18_000);
    expect(us.dst!.offset).toBe(-14_400);
    // glibc's default dates for a rule with none: second Sunday of March to first of November.
    expect(ruleOffset(us, Date.UTC(2025, 2, 9, 6, 59, 59) / 1000)).toBe(-18_000);
    expect(ruleOffset(us, Date.UTC(2025, 2, 9, 7) / 1000)).toBe(-14_400);
    expect(ruleOffset(us, Date.UTC(2025, 10, 2, 5, 59, 59) / 1000)).toBe(-14_400);
    expect(ruleOffset(us, Date.UTC(2025, 10, 2, 6) / 1000)).toBe(-18_000);
    // J60 is 1 March in every year; 59 (zero-based) is 29 February in a leap year.
    const julian = parsePosixRule("AAA0BBB,J60/0,J300/0")!;
    expect(ruleOffset(julian, Date.UTC(2024, 1, 29, 23) / 1000)).toBe(0);
    expect(ruleOffset(julian, Date.UTC(2024, 2, 1) / 1000)).toBe(3600);
    const zero = parsePosixRule("AAA0BBB,59/0,299/0")!;
    expect(ruleOffset(zero, Date.UTC(2024, 1, 28, 23, 59) / 1000)).toBe(0);
    expect(ruleOffset(zero, Date.UTC(2024, 1, 29) / 1000)).toBe(3600);
    expect(ruleOffset(zero, Date.UTC(2023, 1, 28, 23, 59) / 1000)).toBe(0);
    expect(ruleOffset(zero, Date.UTC(2023, 2, 1) / 1000)).toBe(3600);
    for (const bad of ["", "5", "EST", "EST5EDT,M3.2.0", "EST5EDT;M3.2.0,M11.1.0", "EST5EDT,M3.2.0,M11.1.0junk"]) expect([bad, parsePosixRule(bad)]).toEqual([bad, null]);
  });

  test("TZ as glibc reads it: unset is /etc/localtime, empty is UTC, ':' and absolute paths name files, else a POSIX rule, else UTC", () => {
    expect(loadZone("")).toEqual({ transitions: [], offsets: [], initial: 0 });
    expect(zoneOffset(loadZone(":Asia/Kolkata")!, 1_700_000_000)).toBe(19_800);
    expect(zoneOffset(loadZone(join(ZONEINFO, "Asia/Kolkata"))!, 1_700_000_000)).toBe(19_800);
    expect(zoneOffset(loadZone("Asia/Kolkata", "/nonexistent")!, 1_700_000_000)).toBe(0);
    expect(zoneOffset(loadZone("<+0545>-5:45", "/nonexistent")!, 1_700_000_000)).toBe(20_700);
    expect(zoneOffset(loadZone("Not/A_Zone")!, 1_700_000_000)).toBe(0);
    const local = loadZone(undefined)!;
    expect(zoneOffset(local, 1_700_000_000)).toBe(0 - new Date(1_700_000_000_000).getTimezoneOffset() * 60 + 0);
  });
});
