/**
 * The Settings ▸ Capability Center web UI. `vite build ui` (from the repository root) builds it
 * into dist/ui/, which the daemon serves. Relative asset URLs (`base: './'`); nothing external.
 */
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

export default defineConfig({
  plugins: [react()],
  base: './',
  build: {
    outDir: '../dist/ui',
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: false,
    // Everything is a file under dist/ui/assets: no data: URLs, no inline code (a strict CSP stays possible).
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
  },
});
