/**
 * A RequestTarget is a request's path and query once the hub has checked them: every routing and access decision is
 * made on this one reading, so that no layer behind the hub (Next.js, tRPC) can resolve the path to something else.
 */
export interface RequestTarget {
  /** The path as sent (still percent-encoded), with no dot segments, encoded slashes or control characters. */
  readonly path: string;
  /** The query with its "?", or "". */
  readonly search: string;
}

/** Why a request target was refused: each becomes a 400 whose message names it. */
export type TargetRefusal =
  "not-a-path" | "control-character" | "backslash" | "undecodable" | "encoded-slash" | "dot-segment" | "empty-segment";

export type TargetResult =
  { readonly ok: true; readonly target: RequestTarget } | { readonly ok: false; readonly reason: TargetRefusal; readonly message: string };

const MESSAGES: Record<TargetRefusal, string> = {
  "not-a-path": "the request target must be a path starting with /",
  "control-character": "the path holds a control character",
  backslash: "the path holds a backslash",
  undecodable: "the path holds a percent sign that does not start a valid UTF-8 escape",
  "encoded-slash": "the path holds an encoded slash (%2F or %5C)",
  "dot-segment": 'the path holds a "." or ".." segment',
  "empty-segment": 'the path holds an empty segment ("//")',
};

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;

function refuse(reason: TargetRefusal): TargetResult {
  return { ok: false, reason, message: MESSAGES[reason] };
}

/**
 * parseTarget reads a request's target (req.url) the one way the hub trusts. Anything a server behind it could read
 * differently is refused rather than normalised: dot segments, raw or percent-encoded (browsers never send them;
 * they only reach a server from a hand-made request), encoded slashes and backslashes, control characters, escapes
 * that are not UTF-8, empty segments, and absolute-form targets. A trailing slash is kept.
 */
export function parseTarget(url: string | undefined): TargetResult {
  const raw = url ?? "";
  if (!raw.startsWith("/")) return refuse("not-a-path");
  const q = raw.indexOf("?");
  const path = q === -1 ? raw : raw.slice(0, q);
  const search = q === -1 ? "" : raw.slice(q);
  if (CONTROL.test(raw)) return refuse("control-character");
  if (path.includes("\\")) return refuse("backslash");
  const segments = path.split("/");
  for (let i = 1; i < segments.length; i++) {
    const s = segments[i] ?? "";
    if (s === "") {
      if (i === segments.length - 1) continue;
      return refuse("empty-segment");
    }
    let d: string;
    try {
      d = decodeURIComponent(s);
    } catch {
      return refuse("undecodable");
    }
    if (d.includes("/") || d.includes("\\")) return refuse("encoded-slash");
    if (d === "." || d === "..") return refuse("dot-segment");
    if (CONTROL.test(d)) return refuse("control-character");
  }
  try {
    decodeURIComponent(search.replace(/\+/g, " "));
  } catch {
    return refuse("undecodable");
  }
  return { ok: true, target: { path, search } };
}

/** decodeSegment decodes one path segment of a checked target (parseTarget proved it decodes). */
export function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
