// Static parts of /props, /slots and /v1/models, copied from the recorded
// server (test/fixtures/llama-server) so clients see the same fields and types.

/** The recorded server's defaults; float32 values as the server prints them. */
function defaultParams(): Record<string, unknown> {
  return {
    seed: 4294967295,
    temperature: 0.800000011920929,
    dynatemp_range: 0.0,
    dynatemp_exponent: 1.0,
    top_k: 40,
    top_p: 0.949999988079071,
    min_p: 0.05000000074505806,
    top_n_sigma: -1.0,
    xtc_probability: 0.0,
    xtc_threshold: 0.10000000149011612,
    typical_p: 1.0,
    repeat_last_n: 64,
    repeat_penalty: 1.0,
    presence_penalty: 0.0,
    frequency_penalty: 0.0,
    dry_multiplier: 0.0,
    dry_base: 1.75,
    dry_allowed_length: 2,
    dry_penalty_last_n: 64,
    mirostat: 0,
    mirostat_tau: 5.0,
    mirostat_eta: 0.10000000149011612,
    adaptive_target: -1.0,
    adaptive_decay: 0.8999999761581421,
    max_tokens: -1,
    n_predict: -1,
    n_keep: 0,
    n_discard: 0,
    ignore_eos: false,
    stream: false,
    n_probs: 0,
    min_keep: 0,
    chat_format: "Content-only",
    reasoning_format: "none",
    reasoning_in_content: false,
    generation_prompt: "",
    samplers: ["penalties", "dry", "top_n_sigma", "top_k", "typ_p", "top_p", "min_p", "xtc", "temperature"],
    "speculative.types": "none",
    timings_per_token: false,
    post_sampling_probs: false,
    backend_sampling: false,
    lora: [],
  };
}

const f32 = (x: number) => Math.fround(x);

/** The params a slot reports for the task it last ran, from the request body. */
export function taskParams(body: Record<string, unknown>, maxTokens: number): Record<string, unknown> {
  const p = defaultParams();
  const num = (k: string) => (typeof body[k] === "number" ? (body[k] as number) : undefined);
  for (const k of [
    "temperature",
    "top_p",
    "min_p",
    "typical_p",
    "presence_penalty",
    "frequency_penalty",
    "repeat_penalty",
  ]) {
    const v = num(k);
    if (v !== undefined) p[k] = f32(v);
  }
  for (const k of ["top_k", "seed", "n_keep", "n_probs", "min_keep", "repeat_last_n"]) {
    const v = num(k);
    if (v !== undefined) p[k] = Math.trunc(v);
  }
  p.max_tokens = maxTokens;
  p.n_predict = maxTokens;
  p.stream = body.stream === true;
  p.chat_format = "peg-native";
  p.reasoning_format = "deepseek";
  p.generation_prompt = "<|im_start|>assistant\n";
  return p;
}

/** A compact template describing what render.ts produces; the real one is configurable. */
export const DEFAULT_CHAT_TEMPLATE = `{#- llama-sim: ChatML rendering with tool schemas first -#}
{%- if tools %}{{- '<|im_start|>system\\n# Tools\\n\\nYou may call one or more of these ' ~ (tools|length) ~ ' functions. Their signatures are within <tools></tools> XML tags:\\n<tools>' }}{%- for tool in tools %}{{- '\\n' ~ (tool | tojson) }}{%- endfor %}{{- '\\n</tools>\\n\\nTo call a function, return a JSON object with the function name and arguments within <tool_call></tool_call> XML tags.' }}{%- if messages[0].role == 'system' %}{{- '\\n\\n' ~ messages[0].content }}{%- endif %}{{- '<|im_end|>\\n' }}{%- endif %}
{%- for message in messages %}{%- if not (tools and loop.first and message.role == 'system') %}{{- '<|im_start|>' ~ message.role ~ '\\n' }}{%- if message.role == 'assistant' and message.reasoning_content %}{{- '<think>\\n' ~ message.reasoning_content.strip('\\n') ~ '\\n</think>\\n\\n' }}{%- endif %}{{- message.content or '' }}{%- for tc in message.tool_calls or [] %}{%- if message.content or not loop.first %}{{- '\\n' }}{%- endif %}{{- '<tool_call>\\n{"name": "' ~ tc.function.name ~ '", "arguments": ' ~ tc.function.arguments ~ '}\\n</tool_call>' }}{%- endfor %}{{- '<|im_end|>\\n' }}{%- endif %}{%- endfor %}
{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}`;

export interface PropsConfig {
  chatTemplate: string;
  totalSlots: number;
  nCtx: number;
  buildInfo: string;
  modelPath: string;
  sleeping: boolean;
}

export function propsBody(c: PropsConfig): Record<string, unknown> {
  return {
    default_generation_settings: { params: defaultParams(), n_ctx: c.nCtx },
    total_slots: c.totalSlots,
    model_alias: c.modelPath,
    model_ftype: "Q4_K_M",
    model_path: c.modelPath,
    modalities: { vision: false, video: false, audio: false },
    media_marker: "<__media_llamaSimMarker00000000000000000__>",
    endpoint_slots: true,
    endpoint_props: false,
    endpoint_metrics: false,
    ui: true,
    ui_settings: {},
    chat_template: c.chatTemplate,
    chat_template_caps: {
      supports_object_arguments: true,
      supports_parallel_tool_calls: true,
      supports_preserve_reasoning: true,
      supports_reasoning_effort: false,
      supports_string_content: true,
      supports_system_role: true,
      supports_tool_calls: true,
      supports_tools: true,
      supports_typed_content: false,
    },
    bos_token: "<|endoftext|>",
    eos_token: "<|endoftext|>",
    build_info: c.buildInfo,
    is_sleeping: c.sleeping,
    cors_proxy_enabled: false,
  };
}

export function modelsBody(modelPath: string, nCtx: number, created: number): Record<string, unknown> {
  return {
    models: [
      {
        name: modelPath,
        model: modelPath,
        modified_at: "",
        size: "",
        digest: "",
        type: "model",
        description: "",
        tags: [""],
        capabilities: ["completion"],
        parameters: "",
        details: {
          parent_model: "",
          format: "gguf",
          family: "",
          families: [""],
          parameter_size: "",
          quantization_level: "",
        },
      },
    ],
    object: "list",
    data: [
      {
        id: modelPath,
        aliases: [modelPath],
        tags: [],
        object: "model",
        created,
        owned_by: "llamacpp",
        meta: {
          vocab_type: true,
          n_vocab: 151936,
          n_ctx: nCtx,
          n_ctx_train: 262144,
          n_embd: 2048,
          n_params: 34_660_610_688,
          size: 21_166_757_888,
          ftype: "Q4_K_M",
        },
      },
    ],
  };
}
