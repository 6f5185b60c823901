#include "kernels/gemm/device_weights.h"

#include "kernels/gemm/int4_prepack.h"

namespace capplan::kernels {

void DeviceWeightSet::Bind(GroupedGemmArgs* a) const {
  a->format = format;
  a->n = n;
  a->k = k;
  a->w_bf16 = bf16.get();
  a->w_fp8 = fp8.get();
  a->w_scales = fp8_scales.get();
  a->w_q = q.get();
  a->w_s = s.get();
  a->w_z = symmetric ? nullptr : z.get();
  a->int4_group = int4_group;
  a->n_padded = n_padded;
}

Result<DeviceWeightSet> UploadWeightSet(const std::vector<const GemmWeights*>& mats) {
  if (mats.empty()) return Status::Invalid("UploadWeightSet: no matrices");
  DeviceWeightSet d;
  const GemmWeights& f = *mats[0];
  d.format = f.format;
  d.count = static_cast<int>(mats.size());
  d.n = f.n;
  d.k = f.k;
  for (const GemmWeights* m : mats) {
    if (m->format != f.format || m->n != f.n || m->k != f.k ||
        (f.format == GemmWeightFormat::kInt4 &&
         (m->int4.group != f.int4.group || m->int4.symmetric != f.int4.symmetric))) {
      return Status::Invalid("UploadWeightSet: matrices differ in format or shape");
    }
  }
  switch (f.format) {
    case GemmWeightFormat::kBf16: {
      std::vector<uint16_t> h;
      h.reserve(static_cast<size_t>(d.count) * d.n * d.k);
      for (const GemmWeights* m : mats) {
        for (const Bf16& b : m->bf16) h.push_back(b.bits);
      }
      CAPPLAN_RETURN_IF_ERROR(d.bf16.Upload(h));
      break;
    }
    case GemmWeightFormat::kFp8PerTensor:
      return Status::Invalid(
          "UploadWeightSet: FP8 per-tensor weights go through cuBLASLt; the "
          "grouped kernel needs 128x128 block scales (fp8_block)");
    case GemmWeightFormat::kFp8Block128: {
      std::vector<uint8_t> codes;
      std::vector<float> scales;
      for (const GemmWeights* m : mats) {
        codes.insert(codes.end(), m->fp8.codes.begin(), m->fp8.codes.end());
        scales.insert(scales.end(), m->fp8.scales.begin(), m->fp8.scales.end());
      }
      CAPPLAN_RETURN_IF_ERROR(d.fp8.Upload(codes));
      CAPPLAN_RETURN_IF_ERROR(d.fp8_scales.Upload(scales));
      break;
    }
    case GemmWeightFormat::kInt4: {
      std::vector<uint32_t> q;
      std::vector<uint16_t> s;
      std::vector<uint8_t> z;
      d.int4_group = f.int4.group;
      d.symmetric = f.int4.symmetric;
      for (const GemmWeights* m : mats) {
        CAPPLAN_ASSIGN_OR_RETURN(Int4Prepacked p, PrepackInt4(m->int4));
        d.n_padded = p.n_padded;
        q.insert(q.end(), p.qweight.begin(), p.qweight.end());
        for (const Bf16& b : p.scales) s.push_back(b.bits);
        z.insert(z.end(), p.zeros.begin(), p.zeros.end());
      }
      CAPPLAN_RETURN_IF_ERROR(d.q.Upload(q));
      CAPPLAN_RETURN_IF_ERROR(d.s.Upload(s));
      if (!d.symmetric) CAPPLAN_RETURN_IF_ERROR(d.z.Upload(z));
      break;
    }
  }
  return d;
}

}  // namespace capplan::kernels
