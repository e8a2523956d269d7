# collectives/local.mk - communication between the processes of a
# distributed run (popc/collectives.h). The core has a built-in
# single-process implementation; these plugins join real process groups.

if HAVE_MPI
# mpi: Open MPI (mpirun, popc launch)
collectives_LTLIBRARIES += %reldir%/mpi.la
%canon_reldir%_mpi_la_SOURCES = %reldir%/mpi.c
%canon_reldir%_mpi_la_CFLAGS = $(AM_CFLAGS) $(MPI_CFLAGS)
%canon_reldir%_mpi_la_LDFLAGS = $(POPC_MODULE_FLAGS)
%canon_reldir%_mpi_la_LIBADD = $(MPI_LIBS)
endif
