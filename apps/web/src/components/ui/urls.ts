import { BASE_PATH } from "~/env";

/** SNAPSHOT_URL: every IP as list rows with the event id to resume from (a plain GET of the tRPC query ips.snapshot). */
export const SNAPSHOT_URL = `${BASE_PATH}/api/trpc/ips.snapshot`;
