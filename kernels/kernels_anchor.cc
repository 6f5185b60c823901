// Anchor translation unit so capplan_kernels_cpu always has one source.
namespace capplan::kernels {
int kernels_anchor = 0;
}
