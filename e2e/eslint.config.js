import base from "@whohas/eslint-config/base";

// Playwright hands the running stack from global-setup to the tests through the environment.
export default [...base, { rules: { "no-restricted-properties": "off" } }];
