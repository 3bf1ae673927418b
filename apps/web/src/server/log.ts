/** A Logger writes one structured JSON line per event, with stable `event` keys. */
export interface Logger {
  info(event: string, fields?: Record<string, unknown>): void;
  warn(event: string, fields?: Record<string, unknown>): void;
  error(event: string, fields?: Record<string, unknown>): void;
}

/** jsonLogger writes JSON lines to stderr. */
export function jsonLogger(component: string, out: NodeJS.WritableStream = process.stderr): Logger {
  const write = (level: string, event: string, fields?: Record<string, unknown>) => {
    out.write(JSON.stringify({ t: new Date().toISOString(), level, component, event, ...fields }) + "\n");
  };
  return { info: (e, f) => write("info", e, f), warn: (e, f) => write("warn", e, f), error: (e, f) => write("error", e, f) };
}

/** silentLogger drops everything (tests). */
export const silentLogger: Logger = { info: () => undefined, warn: () => undefined, error: () => undefined };
