"""The ground floor every other package builds on: files written whole (``io``), the errors a user
can act on (``errors``), the run directory's layout (``layout``), where the repository and its
configs are (``paths``), the stable split of stocks over array tasks (``split``), schema versions of stored files
(``schema``), building tables of many objects (``bulk``) and the results
that cross from the tasks to the libraries (``results``). It imports nothing of the project."""
