/** A Logger writes one structured line per event, with stable `event` keys. */
export interface Logger {
  info(event: string, fields?: Record<string, unknown>): void;
  warn(event: string, fields?: Record<string, unknown>): void;
  error(event: string, fields?: Record<string, unknown>): void;
}

/** LogLevel orders what a logger writes: `warn` drops info lines, `error` drops info and warn. */
export type LogLevel = "info" | "warn" | "error";
const RANK: Record<LogLevel, number> = { info: 0, warn: 1, error: 2 };

/** jsonLogger renders each event as one JSON line and hands it to `write` (the caller owns the stream). */
export function jsonLogger(
  component: string,
  write: (line: string) => void,
  clock: () => Date = () => new Date(),
  min: LogLevel = "info",
): Logger {
  const emit = (level: LogLevel, event: string, fields?: Record<string, unknown>) => {
    if (RANK[level] < RANK[min]) return;
    write(JSON.stringify({ t: clock().toISOString(), level, component, event, ...fields }) + "\n");
  };
  return {
    info: (e, f) => emit("info", e, f),
    warn: (e, f) => emit("warn", e, f),
    error: (e, f) => emit("error", e, f),
  };
}

/** silentLogger drops everything (tests). */
export const silentLogger: Logger = { info: () => undefined, warn: () => undefined, error: () => undefined };
