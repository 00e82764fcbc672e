// Imported before Elysia (which reads NODE_ENV once, as it loads): in development mode a
// validation error pretty-prints the whole invalid value and every issue in it, which takes seconds
// for a large body and overflows the stack for a deeply nested one. The server never runs in it.
process.env.NODE_ENV = "production";
