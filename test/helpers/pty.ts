// A command in a real pseudo-terminal, driven as a person would: wait for its prompt, type keys,
// read what it printed. Bun has no pty API, so python3's `pty` module holds the terminal: it gets
// the argv as JSON (never a shell string), relays what is typed to the terminal and what the
// program writes back, and exits with the program's status.

const DRIVER = String.raw`
import fcntl, json, os, pty, select, struct, sys, termios
argv = json.loads(sys.argv[1])
pid, fd = pty.fork()
if pid == 0:
    fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    os.execvp(argv[0], argv)
typing = True
while True:
    ready = select.select([fd] + ([0] if typing else []), [], [])[0]
    if 0 in ready:
        keys = os.read(0, 65536)
        if keys:
            os.write(fd, keys)
        else:
            typing = False
    if fd in ready:
        try:
            out = os.read(fd, 65536)
        except OSError:
            out = b""
        if not out:
            break
        os.write(1, out)
status = os.waitpid(pid, 0)[1]
code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
`;

export interface PtySession {
  /** Everything the program wrote to its terminal so far, colour codes and carriage returns removed. */
  text(): string;
  /** The same, as written (a redrawn progress bar's carriage returns kept). */
  raw(): string;
  /** Types keys at the terminal ("\r" is Enter, "\x03" Ctrl-C, "\x04" Ctrl-D). */
  type(keys: string): void;
  /** Waits until the output matches, returning it; fails with the output so far when the program
   * exits first or nothing matches within `ms` (a guard against a hang, not a timing check),
   * ending the session then. */
  until(pattern: RegExp, ms?: number): Promise<string>;
  /** The program's exit status. */
  exited: Promise<number>;
  /** Ends the session: kills the driver (and so the terminal) if still running. */
  kill(): void;
}

const plain = (s: string) => s.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, "").replace(/\r/g, "");

/** Runs `argv` on a pseudo-terminal of its own (40x120), with `env`. */
export function spawnPty(argv: string[], env: Record<string, string | undefined>, cwd?: string): PtySession {
  // The driver's stderr is not the test runner's: a session left running would hold its pipe open.
  const driver = Bun.spawn(["/usr/bin/python3", "-c", DRIVER, JSON.stringify(argv)], { env, cwd, stdin: "pipe", stdout: "pipe", stderr: "ignore" });
  let raw = "";
  let done = false;
  const decoder = new TextDecoder();
  const reading = (async () => {
    for await (const chunk of driver.stdout) raw += decoder.decode(chunk, { stream: true });
  })();
  const exited = (async () => {
    const code = await driver.exited;
    await reading;
    done = true;
    return code;
  })();
  return {
    text: () => plain(raw),
    raw: () => raw,
    type(keys) {
      driver.stdin.write(keys);
      driver.stdin.flush();
    },
    async until(pattern, ms = 20_000) {
      const deadline = Date.now() + ms;
      while (!pattern.test(plain(raw))) {
        if (done || Date.now() > deadline) {
          // A failed wait ends the session: its program is not left running after the test.
          if (driver.exitCode === null) driver.kill();
          throw new Error(`no ${pattern} in the terminal${done ? " before the program exited" : ""}:\n${plain(raw)}`);
        }
        await Bun.sleep(25);
      }
      return plain(raw);
    },
    exited,
    kill() {
      if (driver.exitCode === null) driver.kill();
    },
  };
}
