(* An OCaml program for memtrace to trace: the allocations of an ordinary
   OCaml program (lists, maps, strings, records kept in a table) mixed with
   arrays of up to 6,700 words (the major heap) and recursion 2,000 frames
   deep, so that its trace has long backtraces, many distinct stacks and
   objects that live long or are never collected.

   Usage: workload.exe [ROUNDS [EVERY]]: ROUNDS rounds (default 40), a
   descent into the recursion every EVERY rounds (default 10; 1 makes ten
   times as many deep backtraces, most of them distinct). Traces when
   MEMTRACE names a file; MEMTRACE_RATE sets the sampling rate
   (bench/ocaml/make_trace.sh runs it at 0.05). *)

module IntMap = Map.Make (Int)
module StrMap = Map.Make (String)

(* a small deterministic generator, so that every run allocates alike *)
let seed = ref 0x2545f491
let rand n =
  seed := (!seed * 1103515245 + 12345) land 0x3fffffff;
  (!seed lsr 4) mod n

(* objects kept to the end: never collected *)
let kept : Obj.t list ref = ref []
let keep x = kept := Obj.repr x :: !kept

(* a table whose entries are replaced now and then: they live a while *)
let table = Array.make 512 [||]

let list_phase n =
  let l = List.init n (fun i -> i * 3) in
  let l = List.map (fun x -> x + 1) l in
  let l = List.filter (fun x -> x land 3 <> 0) l in
  let l = List.rev_map (fun x -> (x, x * x)) l in
  let sorted = List.sort (fun (a, _) (b, _) -> compare b a) l in
  List.fold_left (fun acc (a, b) -> acc + a + b) 0 sorted

let map_phase n =
  let m = ref IntMap.empty in
  for i = 0 to n - 1 do
    m := IntMap.add (rand (4 * n)) i !m
  done;
  let m = IntMap.map (fun v -> v * 2) !m in
  let m = IntMap.filter (fun k _ -> k land 1 = 0) m in
  IntMap.fold (fun _ v acc -> acc + v) m 0

let string_phase n =
  let s = ref StrMap.empty in
  for i = 0 to n - 1 do
    let key = "k" ^ string_of_int (rand 1000) ^ "-" ^ string_of_int i in
    s := StrMap.add key (String.make (1 + rand 40) 'x') !s
  done;
  let b = Buffer.create 16 in
  StrMap.iter (fun k v -> Buffer.add_string b k; Buffer.add_string b v) !s;
  String.length (Buffer.contents b)

(* arrays of 1 to 6,700 words: above 256 words they go straight to the
   major heap *)
let big_arrays n =
  let total = ref 0 in
  for _ = 1 to n do
    let a = Array.make (1 + rand 6700) 0 in
    a.(0) <- 1;
    total := !total + Array.length a;
    if rand 8 = 0 then table.(rand (Array.length table)) <- a
  done;
  !total

(* small records, some of which are never freed *)
type point = { x : int; y : int; label : string }

let records n =
  let acc = ref [] in
  for i = 1 to n do
    let p = { x = i; y = rand 100; label = string_of_int i } in
    if rand 64 = 0 then keep p;
    acc := p :: !acc
  done;
  List.length !acc

(* recursion: every other level allocates, and the deepest level runs a
   phase, so that backtraces reach [depth] frames of these two functions *)
let rec deep depth k =
  if depth = 0 then k ()
  else begin
    let cell = ref depth in
    let r = if depth land 1 = 0 then deep_even (depth - 1) k else deep (depth - 1) k in
    !cell + r
  end
and deep_even depth k =
  let pair = (depth, [ depth ]) in
  let r = deep (depth - 1) k in
  fst pair + List.length (snd pair) + r

let external_allocs n =
  for _ = 1 to n do
    match Memtrace.External.alloc ~bytes:(64 + rand 4096) with
    | Some tok -> if rand 4 <> 0 then Memtrace.External.free tok
    | None -> ()
  done

let round ~every r =
  let sum = ref 0 in
  sum := !sum + list_phase (50 + rand 250);
  sum := !sum + map_phase (100 + rand 1000);
  sum := !sum + string_phase 500;
  sum := !sum + big_arrays 200;
  sum := !sum + records 2000;
  (* recursion of every depth up to 2,000, one descent every [every]
     rounds: deep backtraces are a small part of the samples, as in most
     programs *)
  if r mod every = 0 then begin
    let depth = 1 + (r / every * 377 mod 2000) in
    sum := !sum + deep depth (fun () -> list_phase 30 + map_phase 20 + big_arrays 1)
  end;
  if r mod 50 = 0 then sum := !sum + deep 2000 (fun () -> records 50);
  external_allocs 2000;
  !sum

let () =
  Memtrace.trace_if_requested ~context:"bench/ocaml workload" ();
  let arg i default = if Array.length Sys.argv > i then int_of_string Sys.argv.(i) else default in
  let rounds = arg 1 40 and every = max 1 (arg 2 10) in
  let sum = ref 0 in
  for r = 1 to rounds do
    sum := !sum + round ~every r
  done;
  Printf.printf "%d rounds, checksum %d, %d kept\n" rounds (!sum land 0xffffff)
    (List.length !kept)
