import { defineConfig } from 'vite'
import react from '@vitejs/plugin-react'
import { resolve } from 'node:path'

// Two pages: the dashboard (index.html, served at /) and the hosted chat
// page (chat.html, served at /w/{clientId}). Asset URLs are relative; the
// Go server adds a <base href> so they resolve from any page path.
// The embed script (webchat.js) is a separate build: vite.embed.config.ts.
//
// `npm run dev` serves the dashboard with hot reload and forwards the API
// (/v1) to a running `parley serve`: http://127.0.0.1:3000, or
// PARLEY_URL.
const parley = process.env.PARLEY_URL ?? 'http://127.0.0.1:3000'

export default defineConfig({
  base: './',
  plugins: [react()],
  server: {
    proxy: {
      '/v1': { target: parley, changeOrigin: true },
    },
  },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    chunkSizeWarningLimit: 1500,
    rollupOptions: {
      input: {
        index: resolve(__dirname, 'index.html'),
        chat: resolve(__dirname, 'chat.html'),
      },
    },
  },
})
