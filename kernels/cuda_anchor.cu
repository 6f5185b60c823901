// Anchor translation unit so capplan_kernels_cuda always has one source.
namespace capplan::kernels {
int cuda_anchor = 0;
}
