"""The ``collc`` commands, one module per command or command group; `collc.cli` assembles
them. A command module imports shared pieces (`collc.options`, `collc.printing`) and what its
command runs, never another command module."""
