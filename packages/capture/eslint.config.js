import base from "@whohas/eslint-config/base";
export default base;
