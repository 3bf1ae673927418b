import { execFile } from "node:child_process";
import { promisify } from "node:util";

const execFileP = promisify(execFile);

/** run executes a command without a shell and returns stdout; a failure throws with the command and its stderr. */
export async function run(cmd: string, args: readonly string[]): Promise<string> {
  try {
    const { stdout } = await execFileP(cmd, args, { maxBuffer: 16 * 1024 * 1024 });
    return stdout;
  } catch (e) {
    const err = e as Error & { stderr?: string; stdout?: string; code?: number | string };
    const said = [err.stderr, err.stdout]
      .map((s) => s?.trim() ?? "")
      .filter((s) => s !== "")
      .join("\n");
    throw new Error(`${cmd} ${args.join(" ")} failed (${err.code ?? "?"}): ${said === "" ? err.message : said}`);
  }
}

/** ip runs iproute2. */
export function ip(...args: string[]): Promise<string> {
  return run("ip", args);
}

/** inNs runs a command inside a network namespace. */
export function inNs(ns: string, cmd: string, ...args: string[]): Promise<string> {
  return run("ip", ["netns", "exec", ns, cmd, ...args]);
}
