"""CLI subcommands that belong to the core package."""
