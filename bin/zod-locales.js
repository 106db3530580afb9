// Stands in for zod's `locales/index.js` inside zod (bin/library-trims.js): its English locale
// alone, the one the project's messages use, instead of all 64.
export { default as en } from 'zod/v4/locales/en.js';
