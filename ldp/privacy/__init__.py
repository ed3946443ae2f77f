"""Privacy accounting (f-DP, GDP, composition, budgets)."""
