// Words more than one page says, written once.

/** Why a blank instruction is refused (the page's composer and quick add). */
export const BLANK_INSTRUCTION = "Type an instruction first — blank space can't be queued.";
