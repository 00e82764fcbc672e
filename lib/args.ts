// Command-line flag strings from users (`llamacpp_args`, `whispercpp_args`) as argv words.

/** Splits a flag string the way a shell would for plain words and quotes, without running a shell. */
export function splitArgs(text: string): string[] {
  const out: string[] = [];
  const re = /"((?:[^"\\]|\\.)*)"|'([^']*)'|(\S+)/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(text))) out.push(m[1] !== undefined ? m[1].replace(/\\(.)/g, "$1") : (m[2] ?? m[3]!));
  return out;
}
