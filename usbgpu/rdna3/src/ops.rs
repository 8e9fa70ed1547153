//! The RDNA3 operations this interpreter knows, with their gfx1100 opcode in each encoding.
//!
//! Opcode numbers are the ones the RDNA3 ISA reference lists per encoding (docs/hw/rdna3-isa.md §2, §4);
//! the LLVM golden
//! test (`tests/tests/amd/rdna3_models.rs`) checks every one that tinygrad's kernels use
//! against `llvm-objdump-19`. VOP1/VOP2/VOPC operations are also reachable through the VOP3
//! encoding at the offsets in [`VOP3_FROM_VOPC`], [`VOP3_FROM_VOP2`] and [`VOP3_FROM_VOP1`].

/// An instruction encoding (docs/hw/rdna3-isa.md §2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Enc {
    Sop1,
    Sop2,
    Sopk,
    Sopc,
    Sopp,
    Smem,
    Vop1,
    Vop2,
    Vopc,
    Vop3,
    Vop3p,
    Vopd,
    Ds,
    Global,
    /// SCRATCH (FLAT segment 1): the GLOBAL operations on per-lane private memory.
    Scratch,
}

/// VOP3 opcode = VOPC opcode + this.
pub const VOP3_FROM_VOPC: u16 = 0;
/// VOP3 opcode = VOP2 opcode + this.
pub const VOP3_FROM_VOP2: u16 = 256;
/// VOP3 opcode = VOP1 opcode + this.
pub const VOP3_FROM_VOP1: u16 = 384;

macro_rules! ops {
    ($($enc:ident $code:literal $var:ident $name:literal;)*) => {
        /// One operation (the mnemonic without an `_e32`/`_e64` suffix).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Op { $($var,)* }
        impl Op {
            /// The LLVM mnemonic.
            pub fn name(self) -> &'static str {
                match self { $(Op::$var => $name,)* }
            }
        }
        /// `(native encoding, opcode, op)` for every known operation.
        pub(crate) const TABLE: &[(Enc, u16, Op)] = &[$((Enc::$enc, $code, Op::$var),)*];
    };
}

ops! {
    // SOP2
    Sop2 0 SAddU32 "s_add_u32"; Sop2 1 SSubU32 "s_sub_u32"; Sop2 2 SAddI32 "s_add_i32";
    Sop2 3 SSubI32 "s_sub_i32"; Sop2 4 SAddcU32 "s_addc_u32"; Sop2 5 SSubbU32 "s_subb_u32";
    Sop2 8 SLshlB32 "s_lshl_b32"; Sop2 9 SLshlB64 "s_lshl_b64"; Sop2 10 SLshrB32 "s_lshr_b32";
    Sop2 11 SLshrB64 "s_lshr_b64"; Sop2 12 SAshrI32 "s_ashr_i32";
    Sop2 18 SMinI32 "s_min_i32"; Sop2 19 SMinU32 "s_min_u32"; Sop2 20 SMaxI32 "s_max_i32";
    Sop2 21 SMaxU32 "s_max_u32"; Sop2 22 SAndB32 "s_and_b32"; Sop2 23 SAndB64 "s_and_b64";
    Sop2 24 SOrB32 "s_or_b32"; Sop2 25 SOrB64 "s_or_b64"; Sop2 26 SXorB32 "s_xor_b32";
    Sop2 27 SXorB64 "s_xor_b64"; Sop2 34 SAndNot1B32 "s_and_not1_b32";
    Sop2 36 SOrNot1B32 "s_or_not1_b32"; Sop2 38 SBfeU32 "s_bfe_u32"; Sop2 39 SBfeI32 "s_bfe_i32";
    Sop2 44 SMulI32 "s_mul_i32"; Sop2 45 SMulHiU32 "s_mul_hi_u32"; Sop2 46 SMulHiI32 "s_mul_hi_i32";
    Sop2 48 SCselectB32 "s_cselect_b32"; Sop2 49 SCselectB64 "s_cselect_b64";
    // SOP1
    Sop1 0 SMovB32 "s_mov_b32"; Sop1 1 SMovB64 "s_mov_b64"; Sop1 2 SCmovB32 "s_cmov_b32";
    Sop1 24 SNotB32 "s_not_b32";
    Sop1 32 SAndSaveexecB32 "s_and_saveexec_b32"; Sop1 34 SOrSaveexecB32 "s_or_saveexec_b32";
    Sop1 48 SAndNot1SaveexecB32 "s_and_not1_saveexec_b32";
    Sop1 14 SSextI32I8 "s_sext_i32_i8"; Sop1 15 SSextI32I16 "s_sext_i32_i16";
    // SOPK
    Sopk 0 SMovkI32 "s_movk_i32"; Sopk 3 SCmpkEqI32 "s_cmpk_eq_i32"; Sopk 4 SCmpkLgI32 "s_cmpk_lg_i32";
    Sopk 5 SCmpkGtI32 "s_cmpk_gt_i32"; Sopk 6 SCmpkGeI32 "s_cmpk_ge_i32"; Sopk 7 SCmpkLtI32 "s_cmpk_lt_i32";
    Sopk 8 SCmpkLeI32 "s_cmpk_le_i32"; Sopk 9 SCmpkEqU32 "s_cmpk_eq_u32"; Sopk 10 SCmpkLgU32 "s_cmpk_lg_u32";
    Sopk 11 SCmpkGtU32 "s_cmpk_gt_u32"; Sopk 12 SCmpkGeU32 "s_cmpk_ge_u32"; Sopk 13 SCmpkLtU32 "s_cmpk_lt_u32";
    Sopk 14 SCmpkLeU32 "s_cmpk_le_u32"; Sopk 15 SAddkI32 "s_addk_i32"; Sopk 16 SMulkI32 "s_mulk_i32";
    // SOPC
    Sopc 0 SCmpEqI32 "s_cmp_eq_i32"; Sopc 1 SCmpLgI32 "s_cmp_lg_i32"; Sopc 2 SCmpGtI32 "s_cmp_gt_i32";
    Sopc 3 SCmpGeI32 "s_cmp_ge_i32"; Sopc 4 SCmpLtI32 "s_cmp_lt_i32"; Sopc 5 SCmpLeI32 "s_cmp_le_i32";
    Sopc 6 SCmpEqU32 "s_cmp_eq_u32"; Sopc 7 SCmpLgU32 "s_cmp_lg_u32"; Sopc 8 SCmpGtU32 "s_cmp_gt_u32";
    Sopc 9 SCmpGeU32 "s_cmp_ge_u32"; Sopc 10 SCmpLtU32 "s_cmp_lt_u32"; Sopc 11 SCmpLeU32 "s_cmp_le_u32";
    Sopc 12 SBitcmp0B32 "s_bitcmp0_b32"; Sopc 13 SBitcmp1B32 "s_bitcmp1_b32";
    Sopc 16 SCmpEqU64 "s_cmp_eq_u64"; Sopc 17 SCmpLgU64 "s_cmp_lg_u64";
    // SOPP
    Sopp 0 SNop "s_nop"; Sopp 4 SSetInstPrefetchDistance "s_set_inst_prefetch_distance";
    Sopp 5 SClause "s_clause"; Sopp 7 SDelayAlu "s_delay_alu"; Sopp 8 SWaitcntDepctr "s_waitcnt_depctr";
    Sopp 9 SWaitcnt "s_waitcnt"; Sopp 31 SCodeEnd "s_code_end"; Sopp 32 SBranch "s_branch";
    Sopp 33 SCbranchScc0 "s_cbranch_scc0"; Sopp 34 SCbranchScc1 "s_cbranch_scc1";
    Sopp 35 SCbranchVccz "s_cbranch_vccz"; Sopp 36 SCbranchVccnz "s_cbranch_vccnz";
    Sopp 37 SCbranchExecz "s_cbranch_execz"; Sopp 38 SCbranchExecnz "s_cbranch_execnz";
    Sopp 48 SEndpgm "s_endpgm"; Sopp 54 SSendmsg "s_sendmsg"; Sopp 61 SBarrier "s_barrier";
    // SMEM
    Smem 0 SLoadB32 "s_load_b32"; Smem 1 SLoadB64 "s_load_b64"; Smem 2 SLoadB128 "s_load_b128";
    Smem 3 SLoadB256 "s_load_b256"; Smem 4 SLoadB512 "s_load_b512";
    // VOP1
    Vop1 0 VNop "v_nop"; Vop1 1 VMovB32 "v_mov_b32"; Vop1 2 VReadfirstlaneB32 "v_readfirstlane_b32";
    Vop1 5 VCvtF32I32 "v_cvt_f32_i32"; Vop1 6 VCvtF32U32 "v_cvt_f32_u32";
    Vop1 7 VCvtU32F32 "v_cvt_u32_f32"; Vop1 8 VCvtI32F32 "v_cvt_i32_f32";
    Vop1 10 VCvtF16F32 "v_cvt_f16_f32"; Vop1 11 VCvtF32F16 "v_cvt_f32_f16";
    Vop1 17 VCvtF32Ubyte0 "v_cvt_f32_ubyte0"; Vop1 18 VCvtF32Ubyte1 "v_cvt_f32_ubyte1";
    Vop1 19 VCvtF32Ubyte2 "v_cvt_f32_ubyte2"; Vop1 20 VCvtF32Ubyte3 "v_cvt_f32_ubyte3";
    Vop1 32 VFractF32 "v_fract_f32"; Vop1 33 VTruncF32 "v_trunc_f32"; Vop1 34 VCeilF32 "v_ceil_f32";
    Vop1 35 VRndneF32 "v_rndne_f32"; Vop1 36 VFloorF32 "v_floor_f32"; Vop1 37 VExpF32 "v_exp_f32";
    Vop1 39 VLogF32 "v_log_f32"; Vop1 42 VRcpF32 "v_rcp_f32"; Vop1 43 VRcpIflagF32 "v_rcp_iflag_f32";
    Vop1 46 VRsqF32 "v_rsq_f32"; Vop1 51 VSqrtF32 "v_sqrt_f32"; Vop1 53 VSinF32 "v_sin_f32";
    Vop1 54 VCosF32 "v_cos_f32"; Vop1 55 VNotB32 "v_not_b32"; Vop1 56 VBfrevB32 "v_bfrev_b32";
    Vop1 57 VClzI32U32 "v_clz_i32_u32"; Vop1 58 VCtzI32B32 "v_ctz_i32_b32"; Vop1 59 VClsI32 "v_cls_i32";
    Vop1 16 VCvtF64F32 "v_cvt_f64_f32";
    Vop1 80 VCvtF16U16 "v_cvt_f16_u16"; Vop1 81 VCvtF16I16 "v_cvt_f16_i16";
    Vop1 82 VCvtU16F16 "v_cvt_u16_f16"; Vop1 83 VCvtI16F16 "v_cvt_i16_f16"; Vop1 84 VRcpF16 "v_rcp_f16";
    Vop1 85 VSqrtF16 "v_sqrt_f16"; Vop1 86 VRsqF16 "v_rsq_f16"; Vop1 87 VLogF16 "v_log_f16";
    Vop1 88 VExpF16 "v_exp_f16"; Vop1 91 VFloorF16 "v_floor_f16"; Vop1 92 VCeilF16 "v_ceil_f16";
    Vop1 93 VTruncF16 "v_trunc_f16"; Vop1 94 VRndneF16 "v_rndne_f16"; Vop1 96 VSinF16 "v_sin_f16";
    Vop1 97 VCosF16 "v_cos_f16";
    // VOP2
    Vop2 1 VCndmaskB32 "v_cndmask_b32"; Vop2 3 VAddF32 "v_add_f32"; Vop2 4 VSubF32 "v_sub_f32";
    Vop2 5 VSubrevF32 "v_subrev_f32"; Vop2 8 VMulF32 "v_mul_f32"; Vop2 9 VMulI32I24 "v_mul_i32_i24";
    Vop2 10 VMulHiI32I24 "v_mul_hi_i32_i24"; Vop2 11 VMulU32U24 "v_mul_u32_u24";
    Vop2 12 VMulHiU32U24 "v_mul_hi_u32_u24"; Vop2 15 VMinF32 "v_min_f32"; Vop2 16 VMaxF32 "v_max_f32";
    Vop2 17 VMinI32 "v_min_i32"; Vop2 18 VMaxI32 "v_max_i32"; Vop2 19 VMinU32 "v_min_u32";
    Vop2 20 VMaxU32 "v_max_u32"; Vop2 24 VLshlrevB32 "v_lshlrev_b32"; Vop2 25 VLshrrevB32 "v_lshrrev_b32";
    Vop2 26 VAshrrevI32 "v_ashrrev_i32"; Vop2 27 VAndB32 "v_and_b32"; Vop2 28 VOrB32 "v_or_b32";
    Vop2 29 VXorB32 "v_xor_b32"; Vop2 30 VXnorB32 "v_xnor_b32"; Vop2 32 VAddCoCiU32 "v_add_co_ci_u32";
    Vop2 33 VSubCoCiU32 "v_sub_co_ci_u32"; Vop2 34 VSubrevCoCiU32 "v_subrev_co_ci_u32";
    Vop2 37 VAddNcU32 "v_add_nc_u32"; Vop2 38 VSubNcU32 "v_sub_nc_u32";
    Vop2 39 VSubrevNcU32 "v_subrev_nc_u32"; Vop2 43 VFmacF32 "v_fmac_f32"; Vop2 44 VFmamkF32 "v_fmamk_f32";
    Vop2 45 VFmaakF32 "v_fmaak_f32";
    Vop2 50 VAddF16 "v_add_f16"; Vop2 51 VSubF16 "v_sub_f16"; Vop2 52 VSubrevF16 "v_subrev_f16";
    Vop2 53 VMulF16 "v_mul_f16"; Vop2 54 VFmacF16 "v_fmac_f16"; Vop2 57 VMaxF16 "v_max_f16";
    Vop2 58 VMinF16 "v_min_f16"; Vop2 55 VFmamkF16 "v_fmamk_f16"; Vop2 56 VFmaakF16 "v_fmaak_f16";
    // VOPC; v_cmpx_* = v_cmp_* + 128
    Vopc 17 VCmpLtF32 "v_cmp_lt_f32"; Vopc 18 VCmpEqF32 "v_cmp_eq_f32"; Vopc 19 VCmpLeF32 "v_cmp_le_f32";
    Vopc 20 VCmpGtF32 "v_cmp_gt_f32"; Vopc 21 VCmpLgF32 "v_cmp_lg_f32"; Vopc 22 VCmpGeF32 "v_cmp_ge_f32";
    Vopc 23 VCmpOF32 "v_cmp_o_f32"; Vopc 24 VCmpUF32 "v_cmp_u_f32"; Vopc 25 VCmpNgeF32 "v_cmp_nge_f32";
    Vopc 26 VCmpNlgF32 "v_cmp_nlg_f32"; Vopc 27 VCmpNgtF32 "v_cmp_ngt_f32"; Vopc 28 VCmpNleF32 "v_cmp_nle_f32";
    Vopc 29 VCmpNeqF32 "v_cmp_neq_f32"; Vopc 30 VCmpNltF32 "v_cmp_nlt_f32";
    Vopc 65 VCmpLtI32 "v_cmp_lt_i32"; Vopc 66 VCmpEqI32 "v_cmp_eq_i32"; Vopc 67 VCmpLeI32 "v_cmp_le_i32";
    Vopc 68 VCmpGtI32 "v_cmp_gt_i32"; Vopc 69 VCmpNeI32 "v_cmp_ne_i32"; Vopc 70 VCmpGeI32 "v_cmp_ge_i32";
    Vopc 73 VCmpLtU32 "v_cmp_lt_u32"; Vopc 74 VCmpEqU32 "v_cmp_eq_u32"; Vopc 75 VCmpLeU32 "v_cmp_le_u32";
    Vopc 76 VCmpGtU32 "v_cmp_gt_u32"; Vopc 77 VCmpNeU32 "v_cmp_ne_u32"; Vopc 78 VCmpGeU32 "v_cmp_ge_u32";
    Vopc 89 VCmpLtU64 "v_cmp_lt_u64"; Vopc 90 VCmpEqU64 "v_cmp_eq_u64"; Vopc 91 VCmpLeU64 "v_cmp_le_u64";
    Vopc 92 VCmpGtU64 "v_cmp_gt_u64"; Vopc 93 VCmpNeU64 "v_cmp_ne_u64"; Vopc 94 VCmpGeU64 "v_cmp_ge_u64";
    Vopc 1 VCmpLtF16 "v_cmp_lt_f16"; Vopc 2 VCmpEqF16 "v_cmp_eq_f16"; Vopc 3 VCmpLeF16 "v_cmp_le_f16";
    Vopc 4 VCmpGtF16 "v_cmp_gt_f16"; Vopc 5 VCmpLgF16 "v_cmp_lg_f16"; Vopc 6 VCmpGeF16 "v_cmp_ge_f16";
    Vopc 7 VCmpOF16 "v_cmp_o_f16"; Vopc 8 VCmpUF16 "v_cmp_u_f16"; Vopc 9 VCmpNgeF16 "v_cmp_nge_f16";
    Vopc 10 VCmpNlgF16 "v_cmp_nlg_f16"; Vopc 11 VCmpNgtF16 "v_cmp_ngt_f16"; Vopc 12 VCmpNleF16 "v_cmp_nle_f16";
    Vopc 13 VCmpNeqF16 "v_cmp_neq_f16"; Vopc 14 VCmpNltF16 "v_cmp_nlt_f16";
    Vopc 49 VCmpLtI16 "v_cmp_lt_i16"; Vopc 50 VCmpEqI16 "v_cmp_eq_i16"; Vopc 51 VCmpLeI16 "v_cmp_le_i16";
    Vopc 52 VCmpGtI16 "v_cmp_gt_i16"; Vopc 53 VCmpNeI16 "v_cmp_ne_i16"; Vopc 54 VCmpGeI16 "v_cmp_ge_i16";
    Vopc 57 VCmpLtU16 "v_cmp_lt_u16"; Vopc 58 VCmpEqU16 "v_cmp_eq_u16"; Vopc 59 VCmpLeU16 "v_cmp_le_u16";
    Vopc 60 VCmpGtU16 "v_cmp_gt_u16"; Vopc 61 VCmpNeU16 "v_cmp_ne_u16"; Vopc 62 VCmpGeU16 "v_cmp_ge_u16";
    Vopc 125 VCmpClassF16 "v_cmp_class_f16";
    Vopc 145 VCmpxLtF32 "v_cmpx_lt_f32"; Vopc 148 VCmpxGtF32 "v_cmpx_gt_f32";
    Vopc 193 VCmpxLtI32 "v_cmpx_lt_i32"; Vopc 196 VCmpxGtI32 "v_cmpx_gt_i32";
    Vopc 201 VCmpxLtU32 "v_cmpx_lt_u32"; Vopc 202 VCmpxEqU32 "v_cmpx_eq_u32";
    Vopc 204 VCmpxGtU32 "v_cmpx_gt_u32"; Vopc 205 VCmpxNeU32 "v_cmpx_ne_u32";
    Vopc 206 VCmpxGeU32 "v_cmpx_ge_u32"; Vopc 220 VCmpxGtU64 "v_cmpx_gt_u64";
    Vopc 222 VCmpxGeU64 "v_cmpx_ge_u64";
    // VOP3-only
    Vop3 522 VMadI32I24 "v_mad_i32_i24"; Vop3 523 VMadU32U24 "v_mad_u32_u24";
    Vop3 528 VBfeU32 "v_bfe_u32"; Vop3 529 VBfeI32 "v_bfe_i32"; Vop3 530 VBfiB32 "v_bfi_b32";
    Vop3 531 VFmaF32 "v_fma_f32"; Vop3 534 VAlignbitB32 "v_alignbit_b32";
    Vop3 537 VMin3F32 "v_min3_f32"; Vop3 538 VMin3I32 "v_min3_i32"; Vop3 539 VMin3U32 "v_min3_u32";
    Vop3 540 VMax3F32 "v_max3_f32"; Vop3 541 VMax3I32 "v_max3_i32"; Vop3 542 VMax3U32 "v_max3_u32";
    Vop3 543 VMed3F32 "v_med3_f32"; Vop3 544 VMed3I32 "v_med3_i32"; Vop3 545 VMed3U32 "v_med3_u32";
    Vop3 581 VXadU32 "v_xad_u32"; Vop3 582 VLshlAddU32 "v_lshl_add_u32"; Vop3 583 VAddLshlU32 "v_add_lshl_u32";
    Vop3 597 VAdd3U32 "v_add3_u32"; Vop3 598 VLshlOrB32 "v_lshl_or_b32"; Vop3 599 VAndOrB32 "v_and_or_b32";
    Vop3 600 VOr3B32 "v_or3_b32"; Vop3 766 VMadU64U32 "v_mad_u64_u32"; Vop3 767 VMadI64I32 "v_mad_i64_i32";
    Vop3 771 VAddNcU16 "v_add_nc_u16"; Vop3 824 VLshlrevB16 "v_lshlrev_b16";
    Vop3 825 VLshrrevB16 "v_lshrrev_b16";
    Vop3 772 VSubNcU16 "v_sub_nc_u16"; Vop3 773 VMulLoU16 "v_mul_lo_u16"; Vop3 777 VMaxU16 "v_max_u16";
    Vop3 778 VMaxI16 "v_max_i16"; Vop3 779 VMinU16 "v_min_u16"; Vop3 780 VMinI16 "v_min_i16";
    Vop3 584 VFmaF16 "v_fma_f16"; Vop3 785 VPackB32F16 "v_pack_b32_f16"; Vop3 580 VPermB32 "v_perm_b32";
    Vop3 768 VAddCoU32 "v_add_co_u32"; Vop3 769 VSubCoU32 "v_sub_co_u32"; Vop3 770 VSubrevCoU32 "v_subrev_co_u32";
    Vop3 796 VLdexpF32 "v_ldexp_f32"; Vop3 797 VBfmB32 "v_bfm_b32"; Vop3 798 VBcntU32B32 "v_bcnt_u32_b32";
    Vop3 812 VMulLoU32 "v_mul_lo_u32"; Vop3 813 VMulHiU32 "v_mul_hi_u32"; Vop3 814 VMulHiI32 "v_mul_hi_i32";
    Vop3 828 VLshlrevB64 "v_lshlrev_b64"; Vop3 829 VLshrrevB64 "v_lshrrev_b64";
    Vop3 830 VAshrrevI64 "v_ashrrev_i64"; Vop3 864 VReadlaneB32 "v_readlane_b32";
    Vop3 865 VWritelaneB32 "v_writelane_b32";
    // VOP3P
    Vop3p 32 VFmaMixF32 "v_fma_mix_f32"; Vop3p 33 VFmaMixloF16 "v_fma_mixlo_f16";
    Vop3p 34 VFmaMixhiF16 "v_fma_mixhi_f16";
    Vop3p 1 VPkMulLoU16 "v_pk_mul_lo_u16"; Vop3p 2 VPkAddI16 "v_pk_add_i16"; Vop3p 3 VPkSubI16 "v_pk_sub_i16";
    Vop3p 10 VPkAddU16 "v_pk_add_u16"; Vop3p 11 VPkSubU16 "v_pk_sub_u16";
    Vop3p 14 VPkFmaF16 "v_pk_fma_f16"; Vop3p 15 VPkAddF16 "v_pk_add_f16"; Vop3p 16 VPkMulF16 "v_pk_mul_f16";
    Vop3p 17 VPkMinF16 "v_pk_min_f16"; Vop3p 18 VPkMaxF16 "v_pk_max_f16";
    // DS
    Ds 13 DsStoreB32 "ds_store_b32"; Ds 30 DsStoreB8 "ds_store_b8"; Ds 31 DsStoreB16 "ds_store_b16";
    Ds 54 DsLoadB32 "ds_load_b32"; Ds 58 DsLoadU8 "ds_load_u8"; Ds 60 DsLoadU16 "ds_load_u16";
    Ds 77 DsStoreB64 "ds_store_b64"; Ds 118 DsLoadB64 "ds_load_b64"; Ds 222 DsStoreB96 "ds_store_b96";
    Ds 223 DsStoreB128 "ds_store_b128"; Ds 254 DsLoadB96 "ds_load_b96"; Ds 255 DsLoadB128 "ds_load_b128";
    // GLOBAL
    Global 16 GlobalLoadU8 "global_load_u8"; Global 17 GlobalLoadI8 "global_load_i8";
    Global 18 GlobalLoadU16 "global_load_u16"; Global 19 GlobalLoadI16 "global_load_i16";
    Global 20 GlobalLoadB32 "global_load_b32"; Global 21 GlobalLoadB64 "global_load_b64";
    Global 22 GlobalLoadB96 "global_load_b96"; Global 23 GlobalLoadB128 "global_load_b128";
    Global 24 GlobalStoreB8 "global_store_b8"; Global 25 GlobalStoreB16 "global_store_b16";
    Global 26 GlobalStoreB32 "global_store_b32"; Global 27 GlobalStoreB64 "global_store_b64";
    Global 28 GlobalStoreB96 "global_store_b96"; Global 29 GlobalStoreB128 "global_store_b128";
    Global 35 GlobalLoadD16HiB16 "global_load_d16_hi_b16"; Global 32 GlobalLoadD16B16 "global_load_d16_b16";
    Global 37 GlobalStoreD16HiB16 "global_store_d16_hi_b16";
}

/// The operation with `opcode` in encoding `enc`, if this interpreter knows it.
pub fn lookup(enc: Enc, opcode: u16) -> Option<Op> {
    TABLE
        .iter()
        .find(|(e, c, _)| *e == enc && *c == opcode)
        .map(|&(_, _, op)| op)
}

/// The VOPD X-half operations by `OPX` (docs/hw/rdna3-isa.md §4); Y adds 16–18.
pub fn vopd_op(code: u8) -> Option<Op> {
    Some(match code {
        0 => Op::VFmacF32,
        1 => Op::VFmaakF32,
        2 => Op::VFmamkF32,
        3 => Op::VMulF32,
        4 => Op::VAddF32,
        5 => Op::VSubF32,
        6 => Op::VSubrevF32,
        8 => Op::VMovB32,
        9 => Op::VCndmaskB32,
        10 => Op::VMaxF32,
        11 => Op::VMinF32,
        16 => Op::VAddNcU32,
        17 => Op::VLshlrevB32,
        18 => Op::VAndB32,
        _ => return None,
    })
}

/// How a source's inline constants and modifiers are interpreted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    /// 32-bit integer or bits.
    B32,
    /// 32-bit float.
    F32,
    /// 16-bit float (low half).
    F16,
    /// 64-bit integer or bits (register pairs).
    B64,
}

impl Ty {
    /// Registers (dwords) the operand occupies.
    pub fn dwords(self) -> u8 {
        if self == Ty::B64 {
            2
        } else {
            1
        }
    }
}

impl Op {
    /// The type of source `i` (0-based).
    pub fn src_ty(self, i: usize) -> Ty {
        use Op::*;
        match self {
            VAddF32 | VSubF32 | VSubrevF32 | VMulF32 | VMinF32 | VMaxF32 | VFmacF32 | VFmamkF32
            | VFmaakF32 | VFmaF32 | VMin3F32 | VMax3F32 | VMed3F32 | VCvtU32F32 | VCvtI32F32
            | VCvtF16F32 | VFractF32 | VTruncF32 | VCeilF32 | VRndneF32 | VFloorF32 | VExpF32
            | VLogF32 | VRcpF32 | VRcpIflagF32 | VRsqF32 | VSqrtF32 | VSinF32 | VCosF32
            | VCmpLtF32 | VCmpEqF32 | VCmpLeF32 | VCmpGtF32 | VCmpLgF32 | VCmpGeF32 | VCmpOF32
            | VCmpUF32 | VCmpNgeF32 | VCmpNlgF32 | VCmpNgtF32 | VCmpNleF32 | VCmpNeqF32
            | VCmpNltF32 | VCmpxLtF32 | VCmpxGtF32 => Ty::F32,
            VLdexpF32 => [Ty::F32, Ty::B32][i.min(1)],
            VCvtF32F16 | VCvtU16F16 | VCvtI16F16 | VRcpF16 | VSqrtF16 | VRsqF16 | VLogF16
            | VExpF16 | VFloorF16 | VCeilF16 | VTruncF16 | VRndneF16 | VSinF16 | VCosF16
            | VAddF16 | VSubF16 | VSubrevF16 | VMulF16 | VFmacF16 | VMaxF16 | VMinF16 | VFmaF16
            | VFmamkF16 | VFmaakF16 | VPackB32F16 | VCmpLtF16 | VCmpEqF16 | VCmpLeF16
            | VCmpGtF16 | VCmpLgF16 | VCmpGeF16 | VCmpOF16 | VCmpUF16 | VCmpNgeF16 | VCmpNlgF16
            | VCmpNgtF16 | VCmpNleF16 | VCmpNeqF16 | VCmpNltF16 => Ty::F16,
            VCmpClassF16 => [Ty::F16, Ty::B32][i.min(1)],
            VCvtF64F32 => Ty::F32,
            VCmpLtU64 | VCmpEqU64 | VCmpLeU64 | VCmpGtU64 | VCmpNeU64 | VCmpGeU64 | VCmpxGtU64
            | VCmpxGeU64 | SMovB64 | SAndB64 | SOrB64 | SXorB64 | SCselectB64 | SCmpEqU64
            | SCmpLgU64 => Ty::B64,
            SLshlB64 | SLshrB64 | VLshlrevB64 | VLshrrevB64 | VAshrrevI64 => {
                let wide = if matches!(self, SLshlB64 | SLshrB64) {
                    0
                } else {
                    1
                };
                if i == wide {
                    Ty::B64
                } else {
                    Ty::B32
                }
            }
            VMadU64U32 | VMadI64I32 => [Ty::B32, Ty::B32, Ty::B64][i.min(2)],
            _ => Ty::B32,
        }
    }

    /// Dwords written to the destination register(s).
    pub fn dst_dwords(self) -> u8 {
        use Op::*;
        match self {
            SMovB64 | SAndB64 | SOrB64 | SXorB64 | SCselectB64 | SLshlB64 | SLshrB64
            | VLshlrevB64 | VLshrrevB64 | VAshrrevI64 | VMadU64U32 | VMadI64I32 | SLoadB64
            | DsLoadB64 | GlobalLoadB64 | DsStoreB64 | GlobalStoreB64 | VCvtF64F32 => 2,
            DsLoadB96 | GlobalLoadB96 | DsStoreB96 | GlobalStoreB96 => 3,
            SLoadB128 | DsLoadB128 | GlobalLoadB128 | DsStoreB128 | GlobalStoreB128 => 4,
            SLoadB256 => 8,
            SLoadB512 => 16,
            _ => 1,
        }
    }

    /// `v_fmamk_*` / `v_fmaak_*`: VOP2 with a trailing literal constant K.
    pub fn has_k(self) -> bool {
        use Op::*;
        matches!(self, VFmamkF32 | VFmaakF32 | VFmamkF16 | VFmaakF16)
    }

    /// The packed 16-bit integer VOP3P operations (two independent 16-bit lanes per dword).
    pub fn is_packed16(self) -> bool {
        use Op::*;
        matches!(
            self,
            VPkMulLoU16 | VPkAddI16 | VPkSubI16 | VPkAddU16 | VPkSubU16
        )
    }

    /// The packed f16 VOP3P operations (two f16 lanes per dword, op_sel/op_sel_hi pick each lane's halves).
    pub fn is_packed_f16(self) -> bool {
        use Op::*;
        matches!(
            self,
            VPkFmaF16 | VPkAddF16 | VPkMulF16 | VPkMinF16 | VPkMaxF16
        )
    }

    /// VOP1/VOP2/VOPC operations that LLVM prints with `_e32`/`_e64` (they have both forms).
    pub fn has_e32(self) -> bool {
        TABLE
            .iter()
            .any(|&(e, _, o)| o == self && matches!(e, Enc::Vop1 | Enc::Vop2 | Enc::Vopc))
            && !matches!(
                self,
                Op::VFmamkF32
                    | Op::VFmaakF32
                    | Op::VFmamkF16
                    | Op::VFmaakF16
                    | Op::VReadfirstlaneB32
            )
    }

    /// `v_cmpx_*`: writes EXEC instead of VCC/SDST.
    pub fn is_cmpx(self) -> bool {
        use Op::*;
        matches!(
            self,
            VCmpxLtF32
                | VCmpxGtF32
                | VCmpxLtI32
                | VCmpxGtI32
                | VCmpxLtU32
                | VCmpxEqU32
                | VCmpxGtU32
                | VCmpxNeU32
                | VCmpxGeU32
                | VCmpxGtU64
                | VCmpxGeU64
        )
    }

    /// GLOBAL and DS stores.
    pub fn is_store(self) -> bool {
        use Op::*;
        matches!(
            self,
            GlobalStoreB8
                | GlobalStoreB16
                | GlobalStoreB32
                | GlobalStoreB64
                | GlobalStoreB96
                | GlobalStoreB128
                | GlobalStoreD16HiB16
                | DsStoreB8
                | DsStoreB16
                | DsStoreB32
                | DsStoreB64
                | DsStoreB96
                | DsStoreB128
        )
    }
}
