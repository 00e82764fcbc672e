// The icon the web app and the API reference show, inline in their pages, so no browser asks for
// /favicon.ico (which would be a 404).

/** The pages' icon, inline (a lemon), so that no browser asks for /favicon.ico. */
export const FAVICON = `<link rel="icon" href="data:image/svg+xml,${encodeURIComponent('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><ellipse cx="8" cy="8.5" rx="6.5" ry="5" fill="#f2c53d" stroke="#c79a00"/><path d="M12 3.5c1.2-.6 2-1.6 2-2.5" stroke="#4c8c2b" fill="none"/></svg>')}" />`;
