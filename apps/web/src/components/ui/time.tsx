"use client";

import { useEffect, useState } from "react";

let listeners = new Set<() => void>();
let timer: ReturnType<typeof setInterval> | null = null;

/** useNow re-renders once a second (one shared timer for every relative time on the page). */
export function useNow(): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const fn = () => setNow(Date.now());
    listeners.add(fn);
    timer ??= setInterval(() => {
      for (const l of listeners) l();
    }, 1000);
    return () => {
      listeners.delete(fn);
      if (listeners.size === 0 && timer !== null) {
        clearInterval(timer);
        timer = null;
        listeners = new Set();
      }
    };
  }, []);
  return now;
}

export function relative(t: number, now: number): string {
  const s = Math.round((now - t) / 1000);
  if (Math.abs(s) < 60) return s <= 1 ? "just now" : `${s} s ago`;
  const m = Math.round(s / 60);
  if (m < 60) return `${m} min ago`;
  const h = Math.round(m / 60);
  return h < 48 ? `${h} h ago` : `${Math.round(h / 24)} d ago`;
}

/** Ago shows a time relative to now, with the full time in the viewer's own zone on hover. */
export function Ago({ t, empty = "never" }: { t: number | null; empty?: string }) {
  const now = useNow();
  if (t === null || t === 0) return <span className="muted">{empty}</span>;
  return (
    // The server's relative time and zone differ from the browser's by a moment and a zone: the browser's win.
    <time dateTime={new Date(t).toISOString()} title={new Date(t).toLocaleString()} suppressHydrationWarning>
      {relative(t, now)}
    </time>
  );
}
