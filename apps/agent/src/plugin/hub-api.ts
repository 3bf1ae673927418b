import type { HubSession } from "./connect.js";
import { ConnectError } from "./connect.js";

/** REQUEST_MS bounds one call of the read API. */
const REQUEST_MS = 15_000;

/** HubError: the hub answered, but not with what was asked (exit 2; 404 is told apart by `status`). */
export class HubError extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

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
    const cause = (e as { cause?: { code?: string; message?: string } }).cause;
    throw new ConnectError(`the hub at ${s.base} did not answer: ${cause?.code ?? cause?.message ?? (e as Error).message}`);
  }
  const text = await res.text();
  if (res.status === 200) {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw new HubError(`${s.base}${path} answered 200 but not JSON: is --url the whohas hub?`, res.status);
    }
  }
  let said = text.slice(0, 300);
  try {
    const body = JSON.parse(text) as { error?: unknown };
    if (typeof body.error === "string") said = body.error;
  } catch {
    // Not the hub's JSON error: its first words say what answered.
  }
  if (res.status === 401) throw new HubError(`the hub refused the token (401): ${said}`, 401);
  throw new HubError(`GET ${path}: ${res.status}: ${said}`, res.status);
}
