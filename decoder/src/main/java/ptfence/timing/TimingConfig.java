package ptfence.timing;

/**
 * What time tracking needs to know about the traced CPU and the trace configuration.
 *
 * @param mtcFreq IA32_RTIT_CTL.MTCFreq (bits 17:14): MTC packets every 2^mtcFreq CTC ticks
 * @param nomFreq the nominal (max non-turbo) ratio, MSR_PLATFORM_INFO[15:8]; 0 if unknown
 * @param cpuid15Eax CPUID leaf 0x15 EAX (TSC/crystal ratio denominator); 0 if unknown
 * @param cpuid15Ebx CPUID leaf 0x15 EBX (TSC/crystal ratio numerator); 0 if unknown
 * @param skl168 whether erratum SKL168 (CYC dropped right before PSB) applies to the CPU
 */
public record TimingConfig(int mtcFreq, int nomFreq, int cpuid15Eax, int cpuid15Ebx, boolean skl168) {
    /** Nothing known: libipt's defaults. */
    public static final TimingConfig DEFAULT = new TimingConfig(0, 0, 0, 0, false);
}
