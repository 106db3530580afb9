// Parts of the libraries that every command would load and none uses, left unloaded: a module
// resolution hook (node:module `registerHooks`, in this thread, for `import` and `require` alike)
// answers one import inside a library with a small stand-in. Registered by bin/bizops-sync.js before
// any library loads; the tests, which import the sources directly, load the libraries whole.
//
// - zod: each of its entry points re-exports its 64 locales (`export * as locales from
//   "../locales/index.js"` in v4/core, v4/classic and v4/mini), so importing zod loads and evaluates
//   every one of them: about 40 ms of CPU of a command's start-up on a machine where `node -e 0`
//   costs 20 ms. The project's messages are zod's English ones, which zod registers itself from
//   `locales/en.js` (untouched). The stand-in (zod-locales.js) exports `en` alone: in a command,
//   `z.locales` holds `en` only; `import ... from 'zod/locales'` still gets them all.
//
// A zod release that moves these files leaves the hook matching nothing: zod then loads whole, as
// without it (test/cli/library-trims.test.ts fails, saying so).
import { registerHooks } from 'node:module';
import { URL } from 'node:url';

/** zod's files that re-export its locales: `node_modules/zod/v4/<core|classic|mini>/<file>.js`. */
const ZOD_LOCALES_IMPORTER = /\/node_modules\/zod\/v4\/(?:core|classic|mini)\/[^/]+\.js$/;
const ZOD_LOCALES_STAND_IN = new URL('./zod-locales.js', import.meta.url).href;

registerHooks({
  resolve(specifier, context, nextResolve) {
    if (specifier === '../locales/index.js' && context.parentURL !== undefined && ZOD_LOCALES_IMPORTER.test(context.parentURL)) {
      return { url: ZOD_LOCALES_STAND_IN, format: 'module', shortCircuit: true };
    }
    return nextResolve(specifier, context);
  },
});
