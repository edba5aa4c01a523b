mod tui;
