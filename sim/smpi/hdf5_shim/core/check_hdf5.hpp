// The simulated build's stand-in for core/check_hdf5.hpp (sim/smpi/CMakeLists.txt puts this
// folder ahead of the source root): SimGrid SMPI programs cannot link the HDF5 that Debian
// builds against OpenMPI, and the simulation reads and writes no HDF5, so core/mpi_env.cpp's
// one HDF5 call, SilenceHdf5Errors, has nothing to silence (sim/driver/sim_hdf5.cpp).
// Thread-safety: as the real header (the function is called once, at start).
#pragma once

namespace shardflow {

void SilenceHdf5Errors();

}  // namespace shardflow
