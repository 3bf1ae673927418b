import type { Clock } from "../commands.js";

/** fakeClock: sleep advances time at once, so a minute of probing runs in microseconds; `t` is its time. */
export function fakeClock(): Clock & { t: number } {
  const c = {
    t: 0,
    now: () => c.t,
    sleep: async (ms: number) => {
      c.t += ms;
      await Promise.resolve();
    },
  };
  return c;
}
