// Messages that reach a client name files, never the folders on this machine they live in.

/** Absolute paths (POSIX, or Windows with a drive letter) inside a message. */
const PATH = /(?:[A-Za-z]:\\|\/)(?:[^\s'"`:,;()\\/]+[\\/])+([^\s'"`:,;()\\/]+)/g;

/** Replaces every absolute path in a message by its last part (the file name). */
export function scrubPaths(message: string): string {
  return message.replace(PATH, (_, name: string) => name);
}

/** A client-supplied name, shortened to fit in a message. */
export function clip(name: string, max = 200): string {
  return name.length > max ? `${name.slice(0, max)}… (${name.length} characters)` : name;
}
