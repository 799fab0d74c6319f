"""Demo data: the default personas, two projects and a few hundred lessons, so every screen has something to show."""
