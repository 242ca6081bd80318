// The package's surface: the service and its config. Re-exporting every module would make every
// export look used (to knip too); tests import modules directly.
export * from "./config.js";
export * from "./service.js";
