// Hide the console window on Windows release builds.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

fn main() -> std::process::ExitCode {
    // The engine it hosts serves many agents: the allocator setting the headless server uses.
    engine::keep_arena_tops();
    local_mcp_desktop::run()
}
