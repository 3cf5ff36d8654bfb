// Preload (`node --require ./localhost_only.cjs ...`): make every server socket listen on 127.0.0.1 only.
// server-everything's HTTP and SSE modes call `app.listen(PORT)`, which binds every interface; the tests must not.
"use strict";
const net = require("net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function patchedListen(...args) {
  if (typeof args[0] === "number" || (typeof args[0] === "string" && /^\d+$/.test(args[0]))) {
    const rest = args.slice(1).filter((a) => typeof a !== "string");
    return listen.call(this, Number(args[0]), "127.0.0.1", ...rest);
  }
  if (args[0] && typeof args[0] === "object" && !("path" in args[0])) {
    args[0] = { ...args[0], host: "127.0.0.1" };
  }
  return listen.apply(this, args);
};
