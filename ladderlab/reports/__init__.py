"""Reports of a run directory: tables, plots, Markdown and HTML, and the experiment pages."""
