// Local wall-clock time without JavaScriptCore's local-time path. JSC's Date methods take the
// UTC offset from ICU's time-zone data, and the first call pages in about 3 MB (ICU's code and
// zone tables) that stays resident for the life of the server (bench memory: idle RSS). The log
// stamps every line with local time, as lemond's localtime_r does, so it takes the offset from
// the same source glibc reads: the TZif file (RFC 8536) that TZ or /etc/localtime names, and
// its POSIX TZ rule (POSIX.1-2017, 8.3) past the file's last transition.
import { readFileSync } from "node:fs";
import { isAbsolute, join } from "node:path";

/** A POSIX TZ rule: standard offset, and the daylight-saving offset with its start and end. */
interface PosixRule {
  /** Seconds east of UTC. */
  std: number;
  dst?: { offset: number; start: RuleDate; end: RuleDate };
}

/** When in the year a change happens (`Jn`, `n` or `Mm.w.d`), at `time` seconds local time. */
type RuleDate = ({ kind: "julian"; day: number } | { kind: "zero"; day: number } | { kind: "month"; month: number; week: number; weekday: number }) & { time: number };

/** A zone: its transitions (UTC seconds, ascending) with the offset each starts, the offset
 * before the first, and the rule after the last. */
export interface Zone {
  transitions: number[];
  offsets: number[];
  initial: number;
  rule?: PosixRule;
}

const DAY = 86_400;

/** `[+-]hh[:mm[:ss]]` in seconds; null when `s` holds none. */
function parseTime(s: string): { value: number; rest: string } | null {
  const m = /^([+-]?)(\d{1,3})(?::(\d{1,2}))?(?::(\d{1,2}))?/.exec(s);
  if (!m) return null;
  const value = Number(m[2]) * 3600 + Number(m[3] ?? 0) * 60 + Number(m[4] ?? 0);
  return { value: m[1] === "-" ? -value : value, rest: s.slice(m[0].length) };
}

/** A zone abbreviation: three or more letters, or anything between `<` and `>`. */
function parseName(s: string): string | null {
  const m = /^(?:<[^>]*>|[A-Za-z]{3,})/.exec(s);
  return m ? s.slice(m[0].length) : null;
}

function parseRuleDate(s: string): { date: RuleDate; rest: string } | null {
  const m = /^(?:J(\d{1,3})|(\d{1,3})|M(\d{1,2})\.(\d)\.(\d))/.exec(s);
  if (!m) return null;
  let rest = s.slice(m[0].length);
  let time = 7200;
  if (rest.startsWith("/")) {
    const t = parseTime(rest.slice(1));
    if (!t) return null;
    time = t.value;
    rest = t.rest;
  }
  const date: RuleDate =
    m[1] !== undefined
      ? { kind: "julian", day: Number(m[1]), time }
      : m[2] !== undefined
        ? { kind: "zero", day: Number(m[2]), time }
        : { kind: "month", month: Number(m[3]), week: Number(m[4]), weekday: Number(m[5]), time };
  return { date, rest };
}

/** A POSIX offset (west of UTC) as seconds east, with no -0. */
const east = (west: number) => (west === 0 ? 0 : -west);

/** Parses a POSIX TZ string (`EST5EDT,M3.2.0,M11.1.0`); null when it is not one. Its offsets
 * count west of UTC; the rule keeps them east, as TZif does. */
export function parsePosixRule(s: string): PosixRule | null {
  let rest = parseName(s);
  if (rest === null) return null;
  const std = parseTime(rest);
  if (!std) return null;
  rest = std.rest;
  if (rest === "") return { std: east(std.value) };
  const afterDst = parseName(rest);
  if (afterDst === null) return null;
  rest = afterDst;
  let dstOffset = east(std.value) + 3600;
  const dst = parseTime(rest);
  if (dst) {
    dstOffset = east(dst.value);
    rest = dst.rest;
  }
  // glibc's rule for a DST name with no dates: the United States' since 2007.
  if (rest === "") rest = ",M3.2.0,M11.1.0";
  if (!rest.startsWith(",")) return null;
  const start = parseRuleDate(rest.slice(1));
  if (!start || !start.rest.startsWith(",")) return null;
  const end = parseRuleDate(start.rest.slice(1));
  if (!end || end.rest !== "") return null;
  return { std: east(std.value), dst: { offset: dstOffset, start: start.date, end: end.date } };
}

const isLeap = (y: number) => (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;

/** Days from 1970-01-01 to the first of `month` (1-12) in `year`. */
const daysFromCivil = (year: number, month: number) => Date.UTC(year, month - 1, 1) / 86_400_000;

/** The UTC second a rule date falls on in `year`, its time read at `offset` seconds east. */
function ruleInstant(date: RuleDate, year: number, offset: number): number {
  let day: number;
  if (date.kind === "julian") day = daysFromCivil(year, 1) + date.day - 1 + (isLeap(year) && date.day >= 60 ? 1 : 0);
  else if (date.kind === "zero") day = daysFromCivil(year, 1) + date.day;
  else {
    const first = daysFromCivil(year, date.month);
    const firstWeekday = (((first + 4) % 7) + 7) % 7; // 1970-01-01 was a Thursday
    let dom = 1 + ((date.weekday - firstWeekday + 7) % 7) + (date.week - 1) * 7;
    const length = daysFromCivil(date.month === 12 ? year + 1 : year, date.month === 12 ? 1 : date.month + 1) - first;
    while (dom > length) dom -= 7;
    day = first + dom - 1;
  }
  return day * DAY + date.time - offset;
}

/** The offset (seconds east of UTC) a rule gives at UTC second `t`. */
export function ruleOffset(rule: PosixRule, t: number): number {
  if (!rule.dst) return rule.std;
  const year = new Date((t + rule.std) * 1000).getUTCFullYear();
  const start = ruleInstant(rule.dst.start, year, rule.std);
  const end = ruleInstant(rule.dst.end, year, rule.dst.offset);
  const inDst = start < end ? t >= start && t < end : !(t >= end && t < start);
  return inDst ? rule.dst.offset : rule.std;
}

/** Reads a TZif file (version 1, or the 64-bit block of version 2 and later, with its footer). */
export function parseTzif(data: Uint8Array): Zone | null {
  if (data.length < 44 || String.fromCharCode(...data.subarray(0, 4)) !== "TZif") return null;
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const header = (at: number) => {
    const [isut, isstd, leap, time, type, chars] = [0, 1, 2, 3, 4, 5].map((i) => view.getUint32(at + 20 + i * 4));
    return { isut: isut!, isstd: isstd!, leap: leap!, time: time!, type: type!, chars: chars! };
  };
  let h = header(0);
  let at = 44;
  let wide = false;
  if (data[4]! >= 0x32) {
    // Skip the 32-bit block for the 64-bit one after it.
    at += h.time * 5 + h.type * 6 + h.chars + h.leap * 8 + h.isstd + h.isut;
    h = header(at);
    at += 44;
    wide = true;
  }
  const size = wide ? 8 : 4;
  const transitions: number[] = [];
  for (let i = 0; i < h.time; i++) transitions.push(wide ? Number(view.getBigInt64(at + i * 8)) : view.getInt32(at + i * 4));
  at += h.time * size;
  const typeOf = data.subarray(at, at + h.time);
  at += h.time;
  const typeOffsets: number[] = [];
  for (let i = 0; i < h.type; i++) typeOffsets.push(view.getInt32(at + i * 6));
  if (!typeOffsets.length) return null;
  at += h.type * 6 + h.chars + h.leap * (size + 4) + h.isstd + h.isut;
  let rule: PosixRule | undefined;
  if (wide && data[at] === 0x0a) {
    const end = data.indexOf(0x0a, at + 1);
    const footer = new TextDecoder().decode(data.subarray(at + 1, end < 0 ? data.length : end));
    rule = (footer && parsePosixRule(footer)) || undefined;
  }
  return { transitions, offsets: [...typeOf].map((i) => typeOffsets[i] ?? typeOffsets[0]!), initial: typeOffsets[0]!, rule };
}

/** The offset (seconds east of UTC) in `zone` at UTC second `t`. */
export function zoneOffset(zone: Zone, t: number): number {
  const { transitions, offsets } = zone;
  if (!transitions.length) return zone.rule ? ruleOffset(zone.rule, t) : zone.initial;
  if (t < transitions[0]!) return zone.initial;
  if (t >= transitions[transitions.length - 1]! && zone.rule) return ruleOffset(zone.rule, t);
  let lo = 0;
  let hi = transitions.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (transitions[mid]! <= t) lo = mid;
    else hi = mid - 1;
  }
  return offsets[lo]!;
}

const UTC: Zone = { transitions: [], offsets: [], initial: 0 };

/** The zone glibc would use for `tz` (the TZ variable): unset, the file /etc/localtime; empty,
 * UTC; else a zone file (`:` optional, relative to TZDIR or /usr/share/zoneinfo) or a POSIX
 * rule; UTC when it names none of these. Null on Windows without such a file, where Date's own
 * local time decides. */
export function loadZone(tz: string | undefined, tzdir = "/usr/share/zoneinfo"): Zone | null {
  const read = (path: string) => {
    try {
      return parseTzif(readFileSync(path));
    } catch {
      return null;
    }
  };
  // Without the file glibc keeps UTC; Windows has no such files, and Date's own path decides.
  if (tz === undefined) return read("/etc/localtime") ?? (process.platform === "win32" ? null : UTC);
  if (tz === "") return UTC;
  const name = tz.startsWith(":") ? tz.slice(1) : tz;
  const file = read(isAbsolute(name) ? name : join(tzdir, name));
  if (file) return file;
  const rule = parsePosixRule(name);
  if (rule) return { transitions: [], offsets: [], initial: rule.std, rule };
  // A TZ glibc cannot read is UTC to it, and to ICU.
  return process.platform === "win32" ? null : UTC;
}

/** Wall-clock fields of an instant. */
export interface WallClock {
  year: number;
  month: number;
  day: number;
  hours: number;
  minutes: number;
  seconds: number;
  milliseconds: number;
}

let zone: Zone | null | undefined;

/** `d`'s wall-clock fields in the server's time zone (TZ, read once). */
export function wallClock(d: Date): WallClock {
  if (zone === undefined) zone = loadZone(process.env.TZ, process.env.TZDIR || undefined);
  if (!zone) {
    return { year: d.getFullYear(), month: d.getMonth() + 1, day: d.getDate(), hours: d.getHours(), minutes: d.getMinutes(), seconds: d.getSeconds(), milliseconds: d.getMilliseconds() };
  }
  const l = new Date(d.getTime() + zoneOffset(zone, Math.floor(d.getTime() / 1000)) * 1000);
  return { year: l.getUTCFullYear(), month: l.getUTCMonth() + 1, day: l.getUTCDate(), hours: l.getUTCHours(), minutes: l.getUTCMinutes(), seconds: l.getUTCSeconds(), milliseconds: l.getUTCMilliseconds() };
}
