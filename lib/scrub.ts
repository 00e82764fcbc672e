// Messages that reach a client name files, never the folders on this machine they live in.

/** Absolute paths (POSIX, or Windows with a drive letter) inside a message. */
const PATH = /(?:[A-Za-z]:\\|\/)(?:[^\s'"`:,;()\\/]+[\\/])+([^\s'"`:,;()\\/]+)/g;

/** Replaces every absolute path in a message by its last part (the file name). */
export function scrubPaths(message: string): string {
  return message.replace(PATH, (_, name: string) => name);
}
