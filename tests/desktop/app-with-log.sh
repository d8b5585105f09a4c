#!/bin/sh
# The app as the desktop tests start it through WebKitWebDriver: the same
# process (exec), its output kept in LOCAL_MCP_APP_LOG, so a test whose app
# does not come up can say what the app said.
exec "$LOCAL_MCP_APP" "$@" >>"$LOCAL_MCP_APP_LOG" 2>&1
