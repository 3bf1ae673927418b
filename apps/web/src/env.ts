/** BASE_PATH is the dashboard's path prefix, fixed when it was built (WHOHAS_BASE_PATH; "" for none). */
export const BASE_PATH = process.env.NEXT_PUBLIC_WHOHAS_BASE_PATH ?? "";
