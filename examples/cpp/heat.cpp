// Explicit heat equation on a ring of cells split over the ranks, in C++, on rankmig's C
// interface built from an installed prefix (docs/installing.md): the state lives in a
// class, a std::vector of cells and an iteration count, registered with rankmig.
//
// Build against an installed rankmig (PREFIX/bin/rankmig, PREFIX/lib/cmake/rankmig):
//
//   cmake -S examples/cpp -B build -DCMAKE_PREFIX_PATH=PREFIX && cmake --build build
//   make -C examples/cpp PKG_CONFIG_PATH=PREFIX/lib/pkgconfig    (pkg-config only)
//
// Run:       mpirun -np 4 build/heat --cells 4096 --iters 20000
// Migrating: PREFIX/bin/rankmig run -n 4 -a av -- build/heat --iters 100000000 --stop-file stop
//
// It prints the versions of rankmig's header and library, then at the end the number of
// iterations and a checksum of the final cells (FNV-1a of their bytes): equal for equal
// cells, ranks and iterations, whether or not the ranks moved meanwhile.
#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

#include <mpi.h>

#include "rankmig.h"

namespace {

/// Iterations between two looks for the stop file.
constexpr std::uint64_t kStopCheck = 100;

struct Options {
    long cells = 4096;
    std::uint64_t iters = 1000;
    const char *stop_file = nullptr;
};

Options parse_options(int argc, char **argv) {
    Options options;
    for (int i = 1; i < argc; i += 2) {
        const std::string flag = argv[i];
        if (i + 1 >= argc) throw std::invalid_argument(flag + " needs a value");
        const char *value = argv[i + 1];
        if (flag == "--stop-file") {
            options.stop_file = value;
            continue;
        }
        char *end = nullptr;
        const unsigned long long number = std::strtoull(value, &end, 10);
        if (*end != '\0' || end == value || value[0] == '-')
            throw std::invalid_argument(flag + " \"" + value + "\": not a whole number");
        if (flag == "--cells") {
            options.cells = static_cast<long>(number);
        } else if (flag == "--iters") {
            options.iters = number;
        } else {
            throw std::invalid_argument("unknown argument \"" + flag +
                                        "\" (use --cells N --iters K [--stop-file PATH])");
        }
    }
    if (options.cells <= 0) throw std::invalid_argument("--cells must be positive");
    return options;
}

/// A rankmig call that failed: its message.
void check(int code, const char *what) {
    if (code < 0) throw std::runtime_error(std::string(what) + ": " + rankmig_last_error());
}

/// The state of one rank: its cells (with one halo cell at each end) and the iteration.
class HeatRing {
  public:
    HeatRing(long cells, int rank, int ranks) : cells_(cells / ranks + 2, 0.0) {
        const long first = rank * (cells / ranks);
        for (std::size_t i = 1; i + 1 < cells_.size(); ++i) {
            const long global = first + static_cast<long>(i) - 1;
            cells_[i] = (global % 97 == 0) ? 100.0 : 0.0;  // hot spots
        }
    }

    /// Registers what the time loop changes: restored here after a restart or a move.
    void register_state() {
        check(rankmig_register("iter", &iter_, sizeof iter_), "rankmig_register iter");
        check(rankmig_register("cells", cells_.data(), cells_.size() * sizeof(double)),
              "rankmig_register cells");
    }

    std::uint64_t iteration() const { return iter_; }

    /// One explicit step: exchange the halo cells with both neighbours, then update.
    void step(MPI_Comm comm) {
        int rank = 0, ranks = 1;
        MPI_Comm_rank(comm, &rank);
        MPI_Comm_size(comm, &ranks);
        const int left = (rank + ranks - 1) % ranks, right = (rank + 1) % ranks;
        const std::size_t last = cells_.size() - 2;
        MPI_Sendrecv(&cells_[last], 1, MPI_DOUBLE, right, 0, &cells_[0], 1, MPI_DOUBLE, left, 0,
                     comm, MPI_STATUS_IGNORE);
        MPI_Sendrecv(&cells_[1], 1, MPI_DOUBLE, left, 1, &cells_[last + 1], 1, MPI_DOUBLE, right,
                     1, comm, MPI_STATUS_IGNORE);
        std::vector<double> next(cells_);
        for (std::size_t i = 1; i <= last; ++i)
            next[i] = cells_[i] + 0.25 * (cells_[i - 1] - 2.0 * cells_[i] + cells_[i + 1]);
        // Copied back, not swapped: the registered buffer stays where rankmig knows it.
        std::copy(next.begin(), next.end(), cells_.begin());
        ++iter_;
    }

    /// FNV-1a of the bytes of every rank's cells in rank order, on rank 0.
    std::uint64_t checksum(MPI_Comm comm) const {
        int rank = 0, ranks = 1;
        MPI_Comm_rank(comm, &rank);
        MPI_Comm_size(comm, &ranks);
        const int own = static_cast<int>(cells_.size() - 2);
        std::vector<double> all(rank == 0 ? static_cast<std::size_t>(own) * ranks : 0);
        MPI_Gather(&cells_[1], own, MPI_DOUBLE, all.data(), own, MPI_DOUBLE, 0, comm);
        std::uint64_t hash = 0xcbf29ce484222325ULL;
        const auto *bytes = reinterpret_cast<const unsigned char *>(all.data());
        for (std::size_t i = 0; i < all.size() * sizeof(double); ++i) {
            hash ^= bytes[i];
            hash *= 0x100000001b3ULL;
        }
        return hash;
    }

  private:
    std::vector<double> cells_;
    std::uint64_t iter_ = 0;
};

/// At every kStopCheck-th iteration: true on every rank when the stop file exists.
bool stop_requested(MPI_Comm comm, const char *stop_file, std::uint64_t iter) {
    if (stop_file == nullptr || iter % kStopCheck != 0) return false;
    int here = access(stop_file, F_OK) == 0 ? 1 : 0, anywhere = 0;
    MPI_Allreduce(&here, &anywhere, 1, MPI_INT, MPI_MAX, comm);
    return anywhere != 0;
}

int run(int argc, char **argv) {
    const Options options = parse_options(argc, argv);
    MPI_Comm comm = MPI_COMM_NULL;
    check(rankmig_init(&comm), "rankmig_init");
    int rank = 0, ranks = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &ranks);
    if (options.cells % ranks != 0)
        throw std::invalid_argument("the ranks do not divide --cells");
    if (rank == 0)
        std::printf("rankmig header %d.%d.%d, library %s\n", RANKMIG_VERSION_MAJOR,
                    RANKMIG_VERSION_MINOR, RANKMIG_VERSION_PATCH, rankmig_version());
    HeatRing ring(options.cells, rank, ranks);
    ring.register_state();
    while (ring.iteration() < options.iters) {
        comm = rankmig_comm();  // changes at migrations
        if (stop_requested(comm, options.stop_file, ring.iteration())) break;
        ring.step(comm);
        check(rankmig_checkpoint(), "rankmig_checkpoint");
    }
    comm = rankmig_comm();
    const std::uint64_t sum = ring.checksum(comm);
    if (rank == 0) {
        std::printf("iterations: %" PRIu64 "\n", ring.iteration());
        std::printf("checksum: %016" PRIx64 "\n", sum);
    }
    check(rankmig_finalize(), "rankmig_finalize");
    return 0;
}

}  // namespace

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int status = 0;
    try {
        status = run(argc, argv);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "heat: %s\n", e.what());
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Finalize();
    return status;
}
