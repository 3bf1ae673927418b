import { randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";

/**
 * BASE_HEADERS go on every answer of the hub: no MIME sniffing, no Referer to other sites (same-origin keeps the
 * Origin header that sign-in checks), and no framing anywhere (clickjacking of the operators' buttons).
 */
const BASE_HEADERS: Readonly<Record<string, string>> = {
  "x-content-type-options": "nosniff",
  "referrer-policy": "same-origin",
  "x-frame-options": "DENY",
};

/** API_CSP: what the hub's own JSON, text and metrics answers may load: nothing, and never in a frame. */
const API_CSP = "default-src 'none'; frame-ancestors 'none'";

/**
 * pageCsp is the dashboard's Content-Security-Policy. Scripts run only with this response's nonce: Next.js reads it
 * from the request's own Content-Security-Policy header and puts it on every script it renders, and 'strict-dynamic'
 * lets those load their chunks. Styles may be inline (the stylesheet is inlined, charts set style attributes).
 * Development mode adds 'unsafe-eval' for React's debugging tools.
 */
export function pageCsp(nonce: string, dev: boolean): string {
  return [
    "default-src 'self'",
    `script-src 'self' 'nonce-${nonce}' 'strict-dynamic'${dev ? " 'unsafe-eval'" : ""}`,
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "font-src 'self'",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join("; ");
}

/** apiHeaders sets the headers of an answer the hub makes itself (JSON, text, metrics, redirects). */
export function apiHeaders(res: ServerResponse): void {
  for (const [k, v] of Object.entries(BASE_HEADERS)) res.setHeader(k, v);
  res.setHeader("content-security-policy", API_CSP);
}

/**
 * pageHeaders sets the headers of a dashboard page with a fresh nonce, and hands the same policy to Next.js on the
 * request (a policy the browser sent is replaced, so only the hub chooses the nonce).
 */
export function pageHeaders(req: IncomingMessage, res: ServerResponse, dev: boolean): void {
  const csp = pageCsp(randomBytes(16).toString("base64"), dev);
  for (const [k, v] of Object.entries(BASE_HEADERS)) res.setHeader(k, v);
  res.setHeader("content-security-policy", csp);
  delete req.headers["content-security-policy-report-only"];
  req.headers["content-security-policy"] = csp;
}
