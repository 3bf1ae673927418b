/** SNAPSHOT_URL: every IP as list rows with the event id to resume from (a plain GET of the tRPC query ips.snapshot). */
export const SNAPSHOT_URL = "/api/trpc/ips.snapshot";
