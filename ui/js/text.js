// Words more than one page says, written once.

/** Why a blank instruction is refused (the page's composer and quick add). */
export const BLANK_INSTRUCTION = "Type an instruction first — blank space can't be queued.";

/**
 * What a person says to an agent, in its chat, once it is connected: it
 * starts the loop (issue 39 §1). The README and the CLI say the same words:
 * engine/src must print exactly this text (keep the two in step).
 */
export const START_SENTENCE =
  "Call the get_user_request tool of local-mcp and do what it returns. When you finish, call it again with a short report of what you did, and keep calling it; never end your turn on your own.";

/** What a queue name may hold (the engine's model::queue_name rule), in a person's words. */
export const QUEUE_NAME_RULE = "A queue name is 1–64 of a–z, 0–9, dot, underscore and dash (no spaces).";

/** Why a pending instruction is held (the engine's `held`: it came from a file), in words. */
export const HELD_FROM = { import: "from an import", restore: "from a restore" };

/** A held ticket's tag: "Held — from an import". */
export const heldTag = (why) => (HELD_FROM[why] ? `Held — ${HELD_FROM[why]}` : "Held");
