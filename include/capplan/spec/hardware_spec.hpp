// Hardware as typed values: accelerators, links, storage tiers, and the system that joins them.
// Optional values are facts the catalog does not know (null there), never invented defaults.
#pragma once

#include <array>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "capplan/units.hpp"

namespace capplan {

// A dense peak rate per number format: known, unknown (null in the catalog), or unsupported.
struct peak_rate {
    enum class state { known, unknown, unsupported };
    state status = state::unknown;
    flop_rate value{};
};

// Training attention kernels with published forward + backward rates (catalog efficiency.attention_kernels); a
// scenario's training.attention_kernel names one, or "fused" (at the matrix units' efficiency, as FlashAttention-3,
// cuDNN and Transformer Engine run on Hopper and later). cudnn / cudnn_fp8: cuDNN's fused attention with 16-bit and
// with FP8 (per-tensor scaled) inputs, as Transformer Engine runs it (FP8 with fp8_dpa), from cuDNN's own benchmark.
inline constexpr std::array<const char*, 5> measured_attention_kernels{"flash_attention_1", "flash_attention_2",
                                                                       "flash_attention_triton", "cudnn", "cudnn_fp8"};

// One published forward + backward rate of a causal attention kernel, counted as FlashAttention-2's benchmark counts it
// (4 s^2 d h forward, halved for causal, x 3.5 with the backward; Dao 2023 §4.1).
struct attention_rate_point {
    double head_dim = 0.0;
    double seq_len = 0.0;
    flop_rate rate;
};

// A training attention kernel's published rates on one part and where they were published (the catalog entry's
// "source"; for a part that shares another's, that part's source, scaled as share_efficiencies says).
struct attention_kernel_table {
    std::string source;
    std::vector<attention_rate_point> points;  // sorted by head dimension, then sequence
};

struct accelerator_spec {
    std::string name;
    std::string vendor;
    std::string source;
    std::optional<data_size> memory_capacity;  // as marketed (datasheet)
    std::optional<data_size> memory_visible;   // as the driver reports it (what allocations can use)
    std::optional<byte_rate> memory_bandwidth;
    std::map<std::string, peak_rate> peak_dense_flops;  // key: fp64, fp32, tf32, bf16, fp16, fp8, fp4, int8, int4
    std::optional<data_size> l2_cache;
    std::optional<power> tdp;
    // NVIDIA compute capability x 10 (B300's 10.3 is 103; NVIDIA's CUDA GPU Compute Capability table); none for other
    // vendors. Transformer Engine chooses its FP8 layouts by it (fp8_gemm_takes_any_layout).
    std::optional<int> compute_capability;
    // Measured efficiencies (achieved / peak) from the catalog's "efficiency" block; empty = not measured.
    std::optional<double> memory_efficiency;
    std::map<std::string, double> matmul_efficiency;     // by format key: bf16, fp8, ...
    // Mixture-of-experts expert GEMMs as engines run them (grouped / fused MoE kernels), by format key;
    // a format without one: as the dense matmul.
    std::map<std::string, double> grouped_matmul_efficiency;
    // PyTorch's eager element-wise kernels by class (eager_class.hpp: contiguous, mixed_dtype, strided, broadcast, reduction),
    // as fractions of the peak bandwidth; a class without one: the memory efficiency.
    std::map<std::string, double> eager_elementwise_efficiency;
    // Training attention kernels' published rates by kernel name.
    std::map<std::string, attention_kernel_table> attention_kernel_rates;
    std::optional<duration> kernel_launch;
    std::optional<duration> prefill_step_overhead;  // host work of a step that runs a prompt (no CUDA graph)
    std::optional<double> roofline_norm;  // p of a kernel's (compute^p + memory^p)^(1/p) (inference_perf.hpp)
    // Raw matrix-multiply efficiency by FLOPs per kernel, measured in `matmul_by_size_format`; small
    // kernels cannot beat it (other formats: FLOPs scaled by the ratio of their peak to that format's,
    // as the same start-up time is reached at proportionally more work).
    std::vector<std::pair<double, double>> matmul_by_size;  // (FLOPs per kernel, efficiency), increasing
    std::string matmul_by_size_format;
    // Catalog "efficiency": {"as": NAME}: this accelerator shares NAME's measured efficiencies (the same
    // die and clocks); resolved when the catalog (or a scenario's inline accelerator) is read. Matrix fractions the
    // part has of its own beside "as" replace the shared ones format by format (kept here so that resolving again,
    // as a scenario naming the part does, gives the same result).
    std::string efficiency_as;
    std::map<std::string, double> own_matmul_efficiency, own_grouped_matmul_efficiency;
    std::map<std::string, attention_kernel_table> own_attention_kernel_rates;  // measured on this part itself
    std::string scale_up_link;                           // link catalog name, empty if none
    std::optional<byte_rate> scale_up_bandwidth_per_direction;
    std::string host_link;

    // Peak for a format key; status unknown when the catalog has no entry.
    // The memory a workload can allocate from: the driver-visible total when known.
    std::optional<data_size> usable_memory() const { return memory_visible ? memory_visible : memory_capacity; }

    peak_rate peak(const std::string& key) const {
        const auto it = peak_dense_flops.find(key);
        return it == peak_dense_flops.end() ? peak_rate{} : it->second;
    }
};

// Whether the tensor cores take FP8 GEMM operands in any layout: Transformer Engine's is_non_tn_fp8_gemm_supported
// (transformer_engine/pytorch/utils.py: compute capability 10.x, 11.x or 13+; Hopper and Ada take only the TN layout,
// and the consumer Blackwell 12.x neither). Where they do not, a per-tensor-scaled FP8 weight keeps its transpose too.
inline bool fp8_gemm_takes_any_layout(const accelerator_spec& a) {
    if (!a.compute_capability) return false;
    const int cc = *a.compute_capability;
    return (cc >= 100 && cc < 120) || cc >= 130;
}

// Copies `from`'s measured efficiencies into `to` (catalog "efficiency": {"as": ...}).
inline void share_efficiencies(accelerator_spec& to, const accelerator_spec& from) {
    to.memory_efficiency = from.memory_efficiency;
    to.matmul_efficiency = from.matmul_efficiency;
    to.grouped_matmul_efficiency = from.grouped_matmul_efficiency;
    to.eager_elementwise_efficiency = from.eager_elementwise_efficiency;
    // Kernel rates are absolute: scaled by the 16-bit peaks (the same die at other clocks runs them in proportion).
    to.attention_kernel_rates = from.attention_kernel_rates;
    const peak_rate mine = to.peak("bf16"), theirs = from.peak("bf16");
    const bool scalable = mine.status == peak_rate::state::known && theirs.status == peak_rate::state::known &&
                          theirs.value.si() > 0;
    const double ratio = scalable ? mine.value / theirs.value : 1.0;
    std::string how = ", unscaled (no bf16 peak to scale by)";
    if (scalable) {
        char text[64];
        std::snprintf(text, sizeof text, " x %.3g (the bf16 peaks' ratio)", ratio);
        how = std::abs(ratio - 1.0) < 5e-4 ? "" : text;  // the same peaks: no ratio to state
    }
    for (auto& [kernel, table] : to.attention_kernel_rates) {
        for (auto& p : table.points) p.rate = p.rate * ratio;
        table.source = "as " + from.name + "'s" + how + ": " + table.source;
    }
    to.kernel_launch = from.kernel_launch;
    to.prefill_step_overhead = from.prefill_step_overhead;
    to.roofline_norm = from.roofline_norm;
    to.matmul_by_size = from.matmul_by_size;
    to.matmul_by_size_format = from.matmul_by_size_format;
}

struct link_spec {
    std::string name;
    std::string kind;   // pcie, nvlink, infiniband, ethernet, ...
    std::string scope;  // x16_slot, per_device, per_port, per_link
    std::string source;
    std::optional<byte_rate> bandwidth_per_direction;
    std::optional<byte_rate> measured_bandwidth_per_direction;
    std::optional<duration> latency;
};

struct storage_spec {
    std::string name;
    std::string kind;   // local_nvme, nfs, parallel_fs, object_store, host_dram
    std::string scope;  // per_drive, per_node, per_client, per_connection, per_socket, aggregate
    std::string source;
    std::optional<byte_rate> read_bandwidth;
    std::optional<byte_rate> write_bandwidth;
    // The whole deployment's limit, shared by every node of a job, beside a per-client figure (a parallel
    // file system's servers, an object-store bucket): the slower of the two binds (storage_io.hpp).
    std::optional<byte_rate> aggregate_read_bandwidth;
    std::optional<byte_rate> aggregate_write_bandwidth;
    // Managed file systems sized by capacity (Azure Managed Lustre, Amazon FSx for Lustre): the aggregate, read
    // and write, is this rate per TiB provisioned x `capacity`, where the two above are not given.
    std::optional<byte_rate> aggregate_bandwidth_per_tib;
    std::optional<double> read_iops;
    std::optional<double> write_iops;
    std::optional<duration> latency;
    std::optional<data_size> capacity;
};

struct scale_out_spec {
    link_spec link;
    int nics_per_node = 0;
    std::string topology;
    double oversubscription = 1.0;
    bool in_network_reduction = false;  // switches reduce in flight (InfiniBand SHARP / NCCL CollNet)
    // Nodes of a pod at full bisection (a fat-tree's lower tiers); `oversubscription` then applies only to traffic
    // between pods (Llama 3, arXiv:2407.21783 §3.3.1: pods of 3,072 GPUs, 1:7 above them). 0: one tier, every
    // crossing oversubscribed.
    int pod_nodes = 0;
};

// The most accelerators a system may have, and so the largest parallel degree: 2^20 = 1,048,576,
// ten times the largest clusters built (xAI's Colossus: 100,000 H100s, announced September 2024),
// and small enough that a product of
// three degrees or counts fits an int64 and a validated degree fits an int.
inline constexpr int max_system_accelerators = 1 << 20;

struct system_spec {
    std::string preset;  // catalog system name it came from, empty if assembled inline
    accelerator_spec accelerator;
    int count = 1;        // accelerators in total
    int per_node = 1;     // accelerators per node
    std::optional<link_spec> scale_up;
    std::string scale_up_topology;  // nvswitch, pcie_host, full_mesh, torus_2d, ...
    int scale_up_domain = 1;
    std::vector<int> torus_shape;          // torus topologies: chips per dimension
    bool scale_up_reduction = false;       // NVSwitch in-network reduction (NVLink SHARP, NCCL "NVLS")
    std::optional<scale_out_spec> scale_out;
    std::optional<storage_spec> storage;
    // A node's own links to remote storage, where a storage fabric is apart from the compute NICs (DGX H100: two
    // 200 Gb/s ports); none: storage traffic shares the scale-out NICs.
    std::optional<byte_rate> storage_network;

    int nodes() const { return (count + per_node - 1) / per_node; }
};

}  // namespace capplan
