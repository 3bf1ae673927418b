import type { HubSession } from "./connect.js";
import { ConnectError } from "./connect.js";
import { clean } from "./render.js";

/** REQUEST_MS bounds one call of the read API. */
const REQUEST_MS = 15_000;
/** MAX_BODY bounds an answer (the read API lists at most what the hub holds: 100,000 IPs fit many times over). */
const MAX_BODY = 256 * 1024 * 1024;

/** HubError: the hub answered, but not with what was asked (exit 2, with the hub's words). */
export class HubError extends Error {}

/** getJson GETs `path` of the read API; any answer but 200 becomes a HubError with the hub's own words. */
export async function getJson(s: HubSession, path: string): Promise<unknown> {
  let res: Response;
  try {
    res = await fetch(`${s.base}${path}`, {
      headers: { authorization: `Bearer ${s.token}`, accept: "application/json" },
      signal: AbortSignal.timeout(REQUEST_MS),
      redirect: "manual",
    });
  } catch (e) {
    const cause = (e as { cause?: { code?: string } }).cause;
    const why = (e as Error).name === "TimeoutError" ? `no answer within ${REQUEST_MS / 1000} s` : (cause?.code ?? "the request failed");
    throw new ConnectError(`the hub at ${s.base} did not answer: ${why}`);
  }
  const text = await bounded(res, s.base);
  if (res.status === 200) {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw new HubError(`${s.base}${path} answered 200 but not JSON: is --url the whohas hub?`);
    }
  }
  if (res.status >= 300 && res.status < 400)
    throw new HubError(
      `GET ${path}: ${res.status}, a redirect to ${clean(res.headers.get("location") ?? "nowhere")}: point --url there (the token is not sent on)`,
    );
  let said = text.slice(0, 300);
  try {
    const body = JSON.parse(text) as { error?: unknown };
    if (typeof body.error === "string") said = body.error;
  } catch {
    // Not the hub's JSON error: its first words say what answered.
  }
  if (res.status === 401) throw new HubError(`the hub refused the token (401): ${clean(said)}`);
  throw new HubError(`GET ${path}: ${res.status}: ${clean(said)}`);
}

/** bounded reads an answer's body, refusing one past MAX_BODY instead of running out of memory. */
async function bounded(res: Response, base: string): Promise<string> {
  const reader = (res.body as ReadableStream<Uint8Array> | null)?.getReader();
  if (reader === undefined) return "";
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > MAX_BODY) {
        await reader.cancel();
        throw new HubError(`the hub at ${base} sent more than ${MAX_BODY / 1024 / 1024} MiB: not the read API's answer`);
      }
      chunks.push(value);
    }
  } catch (e) {
    if (e instanceof HubError) throw e;
    throw new ConnectError(
      `the hub at ${base} stopped answering mid-way: ${(e as Error).name === "TimeoutError" ? "timed out" : "the connection broke"}`,
    );
  }
  return Buffer.concat(chunks).toString("utf8");
}
