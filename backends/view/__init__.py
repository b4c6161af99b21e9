"""``collc view``'s page: a simulated schedule drawn on its topology, as one self-contained
HTML file (`backends.view.page`), built from panels (`backends.view.panel`)."""
